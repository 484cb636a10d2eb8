// Swagger UI for the job queue API (django_pg_jobqueue.api.openapi.SwaggerUIView). The page
// gives the schema URL and the CSRF header and token as data attributes: "Try it out" sends the
// session cookie, and the token on writes, so that a logged-in user can use it as is.
"use strict";

(function () {
  var root = document.getElementById("swagger-ui");
  var csrfHeader = root.dataset.csrfHeader;
  var csrfToken = root.dataset.csrfToken;

  window.ui = SwaggerUIBundle({
    url: root.dataset.schemaUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    persistAuthorization: true,
    // No badge from validator.swagger.io: the page loads nothing from another site (and its
    // Content-Security-Policy would refuse it).
    validatorUrl: null,
    requestInterceptor: function (request) {
      var method = (request.method || "GET").toUpperCase();
      if (method !== "GET" && method !== "HEAD" && method !== "OPTIONS" && csrfToken) {
        request.headers[csrfHeader] = csrfToken;
      }
      return request;
    },
  });
})();
