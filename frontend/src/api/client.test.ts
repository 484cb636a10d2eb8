import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError, api, buildUrl, flattenFieldErrors, readCookie } from "./client";

type Call = { url: string; init: RequestInit };

function mockFetch(responder: (call: Call) => Response | Promise<Response>) {
  const calls: Call[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit) => {
      const call = { url, init };
      calls.push(call);
      return responder(call);
    }),
  );
  return calls;
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

/** The ApiError a request rejects with (failing the test when it resolves). */
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected the request to fail");
    },
    (e: unknown) => e as ApiError,
  );

function clearCookies() {
  for (const c of document.cookie.split(";")) {
    const name = c.split("=")[0].trim();
    if (name) document.cookie = `${name}=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/`;
  }
}

describe("api client", () => {
  beforeEach(clearCookies);
  afterEach(() => vi.unstubAllGlobals());

  it("sends the session cookie and the CSRF token from the csrftoken cookie on writes", async () => {
    document.cookie = "csrftoken=tok123; path=/";
    const calls = mockFetch(() => json({ id: 7 }, 201));
    await api.post("jobs/", { type: "noop" });
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe("/api/v1/jobs/");
    expect(calls[0].init.credentials).toBe("same-origin");
    const headers = calls[0].init.headers as Record<string, string>;
    expect(headers["X-CSRFToken"]).toBe("tok123");
    expect(headers["Content-Type"]).toBe("application/json");
    expect(calls[0].init.body).toBe('{"type":"noop"}');
  });

  it("fetches the CSRF cookie first when there is none", async () => {
    const calls = mockFetch(({ url }) => {
      if (url.endsWith("auth/csrf/")) {
        document.cookie = "csrftoken=fresh; path=/";
        return json({ csrf_token: "fresh" });
      }
      return json({ id: 1 });
    });
    await api.post("auth/login/", { username: "a", password: "b" });
    expect(calls.map((c) => c.url)).toEqual(["/api/v1/auth/csrf/", "/api/v1/auth/login/"]);
    expect((calls[1].init.headers as Record<string, string>)["X-CSRFToken"]).toBe("fresh");
  });

  it("sends no CSRF header on reads", async () => {
    document.cookie = "csrftoken=tok; path=/";
    const calls = mockFetch(() => json({ count: 0, results: [] }));
    await api.get("jobs/", { query: { status: ["queued", "running"], type: "", page: 2 } });
    expect(calls[0].url).toBe("/api/v1/jobs/?status=queued%2Crunning&page=2");
    expect((calls[0].init.headers as Record<string, string>)["X-CSRFToken"]).toBeUndefined();
  });

  it("turns a 400 into an ApiError with the fields named", async () => {
    document.cookie = "csrftoken=tok; path=/";
    mockFetch(() =>
      json(
        {
          code: "invalid",
          detail: "Invalid input.",
          errors: {
            priority: ["Ensure this value is less than or equal to 100."],
            payload: { seconds: ["must be a number."] },
          },
        },
        400,
      ),
    );
    const error = await failure(api.post("jobs/", {}));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(400);
    expect(error.code).toBe("invalid");
    expect(error.fieldErrors).toEqual({
      priority: ["Ensure this value is less than or equal to 100."],
      "payload.seconds": ["must be a number."],
    });
  });

  it("uses the API's detail as the message and reads Retry-After", async () => {
    mockFetch(() => json({ code: "throttled", detail: "Request was throttled." }, 429, { "Retry-After": "12" }));
    const error = await failure(api.get("jobs/"));
    expect(error.message).toBe("Request was throttled.");
    expect(error.retryAfterSeconds).toBe(12);
  });

  it("describes an HTML error page by its status, not its markup", async () => {
    mockFetch(() => new Response("<html>" + "x".repeat(500) + "</html>", { status: 500 }));
    const error = await failure(api.get("metrics/"));
    expect(error.message).toBe("The server failed (HTTP 500).");
  });

  it("reports an unreachable server as status 0", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => {
        throw new TypeError("Failed to fetch");
      }),
    );
    const error = await failure(api.get("jobs/"));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(0);
    expect(error.message).toMatch(/could not be reached/);
  });
});

describe("helpers", () => {
  it("flattens nested and listed DRF errors", () => {
    expect(flattenFieldErrors({ jobs: [{}, { type: ["unknown job type"] }], non_field_errors: ["both"] })).toEqual({
      "jobs.1.type": ["unknown job type"],
      non_field_errors: ["both"],
    });
  });

  it("reads one cookie among many", () => {
    expect(readCookie("csrftoken", "a=1; csrftoken=x%3Dy; b=2")).toBe("x=y");
    expect(readCookie("missing", "a=1")).toBeNull();
  });

  it("builds URLs without empty parameters", () => {
    expect(buildUrl("/jobs/", { a: undefined, b: null, c: "", d: 0, e: false })).toBe("/api/v1/jobs/?d=0&e=false");
  });
});
