// The ReDoc page (django_pg_jobqueue.api.openapi.RedocView), loaded before ReDoc's bundle.
// ReDoc always renders an <img> of Redocly's logo from cdn.redoc.ly in its sidebar; the page
// loads nothing from another site, so its Content-Security-Policy would refuse the image and
// report a violation. Here that one image gets no source at all: ReDoc's own error handler then
// drops it (the "API docs by Redocly" link stays).
"use strict";

(function () {
  var THIRD_PARTY = "https://cdn.redoc.ly/";
  var src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  var setAttribute = Element.prototype.setAttribute;

  function refused(image, value) {
    if (String(value).indexOf(THIRD_PARTY) !== 0) return false;
    setTimeout(function () { image.dispatchEvent(new Event("error")); }, 0);
    return true;
  }

  Object.defineProperty(HTMLImageElement.prototype, "src", {
    configurable: true,
    enumerable: src.enumerable,
    get: function () { return src.get.call(this); },
    set: function (value) { if (!refused(this, value)) src.set.call(this, value); },
  });
  Element.prototype.setAttribute = function (name, value) {
    if (this instanceof HTMLImageElement && String(name).toLowerCase() === "src" && refused(this, value)) {
      return undefined;
    }
    return setAttribute.call(this, name, value);
  };
})();
