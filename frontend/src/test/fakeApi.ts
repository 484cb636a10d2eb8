/**
 * A fake of the API for a test: `answer` gets each request the dashboard sends and says what
 * the server answers. The CSRF token (cookie and GET auth/csrf/) is handled for every test.
 */
import { vi } from "vitest";

export type FakeRequest = {
  /** "/api/v1/jobs/7/" */
  path: string;
  /** The query string's parameters. */
  params: URLSearchParams;
  method: string;
  /** The JSON body sent, parsed (undefined without one). */
  body: unknown;
};

/** What `answer` returns: a body sent as JSON with 200, a Response as it is, or undefined for a 404. */
export type FakeAnswer = unknown;

/** A JSON response with `status` (for a 4xx or a 201 where the default 200 will not do). */
export function reply(status: number, body?: unknown): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), { status });
}

/** Stub `fetch` with `answer`; undo with vi.unstubAllGlobals() (afterEach). */
export function fakeApi(answer: (request: FakeRequest) => FakeAnswer | Promise<FakeAnswer>) {
  document.cookie = "csrftoken=t; path=/";
  const fetch = vi.fn(async (input: string, init?: RequestInit) => {
    const url = new URL(input, "http://test");
    if (url.pathname.endsWith("/auth/csrf/")) return reply(200, { csrf_token: "t" });
    const body: unknown = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
    const out = await answer({ path: url.pathname, params: url.searchParams, method: init?.method ?? "GET", body });
    if (out instanceof Response) return out;
    return out === undefined ? reply(404, { code: "not_found", detail: "not found" }) : reply(200, out);
  });
  vi.stubGlobal("fetch", fetch);
  return fetch;
}
