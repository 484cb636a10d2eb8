import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, buildUrl } from "./api/client";
import { CONFIG_ELEMENT_ID, DEFAULT_CONFIG, readRuntimeConfig, resetRuntimeConfig } from "./config";

/** The JSON island the Django view injects (django_pg_jobqueue.dashboard.views). */
function inject(text: string) {
  document.getElementById(CONFIG_ELEMENT_ID)?.remove();
  const el = document.createElement("script");
  el.type = "application/json";
  el.id = CONFIG_ELEMENT_ID;
  el.textContent = text;
  document.head.append(el);
  resetRuntimeConfig();
}

const mounted = {
  basename: "/ops/queue/",
  apiBase: "/ops/queue-api/v1/",
  apiDocsUrl: "/ops/queue-api/docs/",
  adminUrl: null,
  csrfCookieName: "host_csrf",
  csrfHeaderName: "X-HOST-CSRF",
  passwordLogin: false,
  loginUrl: "https://sso.example/login",
};

function clearCookies() {
  for (const c of document.cookie.split(";")) {
    const name = c.split("=")[0].trim();
    if (name) document.cookie = `${name}=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/`;
  }
}

beforeEach(() => {
  vi.spyOn(console, "error").mockImplementation(() => {});
  clearCookies();
});

afterEach(() => {
  document.getElementById(CONFIG_ELEMENT_ID)?.remove();
  resetRuntimeConfig();
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe("runtime config", () => {
  it("reads the prefix, the API base and the CSRF names the serving page injected", () => {
    inject(JSON.stringify(mounted));
    expect(readRuntimeConfig()).toEqual(mounted);
  });

  it("falls back to the site-root defaults without an island (the Vite dev server)", () => {
    expect(readRuntimeConfig()).toEqual(DEFAULT_CONFIG);
    expect(DEFAULT_CONFIG.apiBase).toBe("/api/v1/");
    expect(DEFAULT_CONFIG.basename).toBe("/");
  });

  it("keeps the defaults when the island is not a JSON object, and says so", () => {
    inject("{not json");
    expect(readRuntimeConfig()).toEqual(DEFAULT_CONFIG);
    inject("[1, 2]");
    expect(readRuntimeConfig()).toEqual(DEFAULT_CONFIG);
    expect(console.error).toHaveBeenCalledTimes(2);
  });

  it("adds the trailing slash a prefix needs", () => {
    inject(JSON.stringify({ basename: "/ops/queue", apiBase: "/ops/api/v1" }));
    const config = readRuntimeConfig();
    expect(config.basename).toBe("/ops/queue/");
    expect(config.apiBase).toBe("/ops/api/v1/");
  });

  it("ignores URLs that would leave the site, and values of the wrong type", () => {
    inject(
      JSON.stringify({
        basename: "https://evil.example/",
        apiBase: "//evil.example/api/",
        apiDocsUrl: "javascript:alert(1)",
        csrfCookieName: "bad name;",
        csrfHeaderName: null,
        adminUrl: 42,
      }),
    );
    expect(readRuntimeConfig()).toEqual(DEFAULT_CONFIG);
    expect(console.error).toHaveBeenCalledTimes(6);
  });

  it("keeps null for links the host does not serve (no admin, no API docs)", () => {
    inject(JSON.stringify({ apiDocsUrl: null, adminUrl: null, csrfCookieName: null }));
    const config = readRuntimeConfig();
    expect(config.apiDocsUrl).toBeNull();
    expect(config.adminUrl).toBeNull();
    expect(config.csrfCookieName).toBeNull();
    expect(config.apiBase).toBe(DEFAULT_CONFIG.apiBase);
  });
});

describe("the api client under a mounted config", () => {
  it("builds every URL on the injected API base", () => {
    inject(JSON.stringify(mounted));
    expect(buildUrl("jobs/", { status: ["queued", "running"] })).toBe(
      "/ops/queue-api/v1/jobs/?status=queued%2Crunning",
    );
    expect(buildUrl("/auth/me/")).toBe("/ops/queue-api/v1/auth/me/");
  });

  it("sends the CSRF token from the host's cookie in the host's header", async () => {
    inject(JSON.stringify(mounted));
    document.cookie = "csrftoken=wrong; path=/";
    document.cookie = "host_csrf=right; path=/";
    const fetch = vi.fn(async () => new Response("{}", { status: 200 }));
    vi.stubGlobal("fetch", fetch);
    await api.post("jobs/", { type: "noop" });
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/ops/queue-api/v1/jobs/");
    const headers = init.headers as Record<string, string>;
    expect(headers["X-HOST-CSRF"]).toBe("right");
    expect(headers["X-CSRFToken"]).toBeUndefined();
  });

  it("uses the token auth/csrf/ answers when the page cannot read the cookie (CSRF_USE_SESSIONS)", async () => {
    inject(JSON.stringify({ ...mounted, csrfCookieName: null }));
    document.cookie = "host_csrf=stale; path=/";
    const urls: string[] = [];
    const sent: (string | undefined)[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string, init: RequestInit) => {
        urls.push(url);
        sent.push((init.headers as Record<string, string>)["X-HOST-CSRF"]);
        const body = url.endsWith("auth/csrf/") ? { csrf_token: `t${urls.length}` } : { id: 1 };
        return new Response(JSON.stringify(body), { status: 200 });
      }),
    );
    await api.post("auth/login/", { username: "a", password: "b" });
    // The token rotates at login: the next write asks again.
    await api.post("jobs/", { type: "noop" });
    expect(urls).toEqual([
      "/ops/queue-api/v1/auth/csrf/",
      "/ops/queue-api/v1/auth/login/",
      "/ops/queue-api/v1/auth/csrf/",
      "/ops/queue-api/v1/jobs/",
    ]);
    expect(sent).toEqual([undefined, "t1", undefined, "t3"]);
  });
});
