/**
 * The one module that talks HTTP. Everything else goes through `api.get/post` (usually via a
 * resource module's query options), so credentials, CSRF and error decoding live here only.
 *
 * - Every path is relative to the API base the serving page injected (see ../config.ts), so
 *   the dashboard works with the API at any prefix.
 * - `credentials: 'same-origin'`: the Django session cookie rides along.
 * - Unsafe methods send the CSRF token (header and cookie names as the host's Django settings
 *   say, `X-CSRFToken` / `csrftoken` by default) from the cookie; when the cookie is missing
 *   (first visit) it is fetched from `auth/csrf/`; when the page cannot read it at all
 *   (CSRF_USE_SESSIONS), the token `auth/csrf/` answers is used.
 * - A non-2xx answer becomes an `ApiError` carrying the status and the decoded JSON body, so
 *   forms can show DRF's per-field errors next to their fields.
 */

import { runtimeConfig } from "../config";
import { noteReadSource } from "./readSource";

export type FieldErrors = Record<string, string[]>;

export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly retryAfterSeconds: number | null;

  constructor(status: number, body: unknown, retryAfterSeconds: number | null = null) {
    super(describeError(status, body));
    this.name = "ApiError";
    this.status = status;
    this.body = body;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** The API's error code (`invalid`, `invalid_transition`, `idempotency_conflict` ...). */
  get code(): string | null {
    const code = isRecord(this.body) ? this.body.code : null;
    return typeof code === "string" ? code : null;
  }

  /**
   * Validation errors flattened to `field -> messages` (nested paths joined with ".", so a
   * handler's complaint about `payload.seconds` lands next to the payload editor). The API
   * wraps them as `{code, detail, errors: {...}}`; a bare DRF body is accepted too.
   */
  get fieldErrors(): FieldErrors {
    if (this.status !== 400) return {};
    return flattenFieldErrors(isRecord(this.body) && isRecord(this.body.errors) ? this.body.errors : this.body);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === "object" && !Array.isArray(value);
}

export function isApiError(error: unknown, status?: number): error is ApiError {
  return error instanceof ApiError && (status === undefined || error.status === status);
}

/** DRF's `{"detail": "..."}` or the first field error, else a generic line per status. */
export function describeError(status: number, body: unknown): string {
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const detail = (body as Record<string, unknown>).detail;
    if (typeof detail === "string") return detail;
    const errors = (body as Record<string, unknown>).errors;
    const fields = flattenFieldErrors(isRecord(errors) ? errors : body);
    const first = Object.entries(fields)[0];
    if (first) return first[0] === "non_field_errors" ? first[1][0] : `${first[0]}: ${first[1][0]}`;
  }
  if (typeof body === "string" && body.trim() && body.length < 300) return body.trim();
  if (status === 0) return "The server could not be reached.";
  if (status === 401) return "You are not logged in.";
  if (status === 403) return "You do not have permission to do that.";
  if (status === 404) return "Not found.";
  if (status === 409) return "That is not possible in the job's current state.";
  if (status === 413) return "The request is too large.";
  if (status === 429) return "Too many requests; try again shortly.";
  if (status >= 500) return `The server failed (HTTP ${status}).`;
  return `Request failed (HTTP ${status}).`;
}

export function flattenFieldErrors(body: unknown, prefix = ""): FieldErrors {
  const out: FieldErrors = {};
  if (!body || typeof body !== "object") return out;
  if (Array.isArray(body)) {
    if (body.every((m) => typeof m === "string")) {
      out[prefix || "non_field_errors"] = body as string[];
    } else {
      body.forEach((item, i) => Object.assign(out, flattenFieldErrors(item, join(prefix, String(i)))));
    }
    return out;
  }
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    if (!prefix && (key === "detail" || key === "code")) continue;
    const path = join(prefix, key);
    if (typeof value === "string") out[path] = [value];
    else Object.assign(out, flattenFieldErrors(value, path));
  }
  return out;
}

function join(prefix: string, key: string) {
  return prefix ? `${prefix}.${key}` : key;
}

export function readCookie(name: string, cookies: string = document.cookie): string | null {
  for (const part of cookies.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return null;
}

export type Query = Record<string, string | number | boolean | null | undefined | (string | number)[]>;

export function buildUrl(path: string, query?: Query): string {
  const url = runtimeConfig().apiBase + path.replace(/^\/+/, "");
  if (!query) return url;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "") continue;
    // Lists go comma-separated (`status=queued,running`), as django-filter's "in" filters take them.
    if (Array.isArray(value)) {
      if (value.length) params.append(key, value.join(","));
    } else params.append(key, String(value));
  }
  const qs = params.toString();
  return qs ? `${url}?${qs}` : url;
}

type RequestOptions = {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);
let csrfPrimed: Promise<string | null> | null = null;

async function csrfToken(): Promise<string | null> {
  const { csrfCookieName } = runtimeConfig();
  const fromCookie = () => (csrfCookieName ? readCookie(csrfCookieName) : null);
  const token = fromCookie();
  if (token) return token;
  // One request for concurrent writes. Its answer sets the cookie; the token it carries is for
  // a host whose token is not in a readable cookie (it rotates at login: asked for each time).
  csrfPrimed ??= request<{ csrf_token?: unknown }>("GET", "auth/csrf/").then(
    (body) => (typeof body?.csrf_token === "string" ? body.csrf_token : null),
    () => null,
  );
  try {
    const answered = await csrfPrimed;
    return fromCookie() ?? answered;
  } finally {
    csrfPrimed = null;
  }
}

/** The response, with the headers a caller may need (idempotent replay). */
export type ApiResponse<T> = { data: T; status: number; headers: Headers };

export async function requestWithMeta<T>(
  method: string,
  path: string,
  { query, body, headers = {}, signal }: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const h: Record<string, string> = { Accept: "application/json", ...headers };
  if (body !== undefined) h["Content-Type"] = "application/json";
  if (UNSAFE.has(method)) {
    const token = await csrfToken();
    if (token) h[runtimeConfig().csrfHeaderName] = token;
  }
  let response: Response;
  try {
    response = await fetch(buildUrl(path, query), {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      signal,
    });
  } catch (error) {
    if ((error as Error)?.name === "AbortError") throw error;
    throw new ApiError(0, null);
  }
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    const retryAfter = Number(response.headers.get("Retry-After"));
    throw new ApiError(response.status, data, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null);
  }
  if (method === "GET") noteReadSource(response.headers);
  return { data: data as T, status: response.status, headers: response.headers };
}

async function request<T>(method: string, path: string, options?: RequestOptions): Promise<T> {
  return (await requestWithMeta<T>(method, path, options)).data;
}

export const api = {
  get: <T>(path: string, options?: RequestOptions) => request<T>("GET", path, options),
  post: <T>(path: string, body?: unknown, options?: RequestOptions) =>
    request<T>("POST", path, { ...options, body: body ?? {} }),
  postWithMeta: <T>(path: string, body?: unknown, options?: RequestOptions) =>
    requestWithMeta<T>("POST", path, { ...options, body: body ?? {} }),
  patch: <T>(path: string, body: unknown, options?: RequestOptions) => request<T>("PATCH", path, { ...options, body }),
  put: <T>(path: string, body: unknown, options?: RequestOptions) => request<T>("PUT", path, { ...options, body }),
  delete: (path: string, options?: RequestOptions) => request<null>("DELETE", path, options),
};
