/**
 * Where the dashboard lives and where its API is, as the Django view that serves it says.
 *
 * The view (django_pg_jobqueue.dashboard.views) injects a JSON island into index.html:
 *   <script type="application/json" id="jobqueue-config">{"basename": "/ops/queue/", ...}</script>
 * It is data, not code, so a Content-Security-Policy without 'unsafe-inline' allows it. Without
 * it (the Vite dev server, the unit tests) the defaults are those of the demo project: the
 * dashboard at `/`, the API at `/api/`.
 */

export const CONFIG_ELEMENT_ID = "jobqueue-config";

export type RuntimeConfig = {
  /** The router's basename: the URL prefix the host mounted the dashboard at (ends with "/"). */
  basename: string;
  /** The API's v1 root, e.g. "/ops/queue-api/v1/" (ends with "/"). */
  apiBase: string;
  /** The API's Swagger UI, or null when the host does not serve it. */
  apiDocsUrl: string | null;
  /** The Django admin's index, or null when the admin is not mounted. */
  adminUrl: string | null;
  /** The cookie holding the CSRF token, or null when the page cannot read it (CSRF_USE_SESSIONS). */
  csrfCookieName: string | null;
  /** The request header Django reads the CSRF token from (CSRF_HEADER_NAME). */
  csrfHeaderName: string;
  /** Whether the dashboard's own password form works (JOB_API_PASSWORD_LOGIN; off in a host). */
  passwordLogin: boolean;
  /** The host's login page (LOGIN_URL), used when the password form is off; null: none. */
  loginUrl: string | null;
};

export const DEFAULT_CONFIG: Readonly<RuntimeConfig> = Object.freeze({
  basename: "/",
  apiBase: "/api/v1/",
  apiDocsUrl: "/api/docs/",
  adminUrl: "/admin/",
  csrfCookieName: "csrftoken",
  csrfHeaderName: "X-CSRFToken",
  passwordLogin: true,
  loginUrl: "/admin/login/",
});

/** A same-origin absolute path ("/x/"), never "//host/" or "https://..."; with a trailing slash. */
function asPrefix(value: unknown): string | undefined {
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//")) return undefined;
  return value.endsWith("/") ? value : `${value}/`;
}

function asPathOrNull(value: unknown): string | null | undefined {
  if (value === null) return null;
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//")) return undefined;
  return value;
}

/** A same-origin path, or an http(s) URL (a host's SSO login lives on another origin). */
function asUrlOrNull(value: unknown): string | null | undefined {
  if (typeof value === "string" && /^https?:\/\//.test(value)) return value;
  return asPathOrNull(value);
}

function asBoolean(value: unknown): boolean | undefined {
  return typeof value === "boolean" ? value : undefined;
}

function asNameOrNull(value: unknown): string | null | undefined {
  if (value === null) return null;
  return typeof value === "string" && /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(value) ? value : undefined;
}

/**
 * The config from the page's JSON island, each field checked; a missing, malformed or unsafe
 * field keeps its default (and says so in the console, since the page then may not work).
 */
export function readRuntimeConfig(doc: Document = document): RuntimeConfig {
  const element = doc.getElementById(CONFIG_ELEMENT_ID);
  if (!element) return { ...DEFAULT_CONFIG };
  let raw: unknown;
  try {
    raw = JSON.parse(element.textContent ?? "");
  } catch {
    console.error(`#${CONFIG_ELEMENT_ID} is not JSON; using the defaults`);
    return { ...DEFAULT_CONFIG };
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    console.error(`#${CONFIG_ELEMENT_ID} is not a JSON object; using the defaults`);
    return { ...DEFAULT_CONFIG };
  }
  const given = raw as Record<string, unknown>;
  const config: RuntimeConfig = { ...DEFAULT_CONFIG };
  const take = <K extends keyof RuntimeConfig>(key: K, parse: (v: unknown) => RuntimeConfig[K] | undefined) => {
    if (!(key in given)) return;
    const value = parse(given[key]);
    if (value === undefined) console.error(`#${CONFIG_ELEMENT_ID}: ignoring ${key}=${JSON.stringify(given[key])}`);
    else config[key] = value;
  };
  take("basename", asPrefix);
  take("apiBase", asPrefix);
  take("apiDocsUrl", asPathOrNull);
  take("adminUrl", asPathOrNull);
  take("csrfCookieName", asNameOrNull);
  take("passwordLogin", asBoolean);
  take("loginUrl", asUrlOrNull);
  take("csrfHeaderName", (v) => {
    const name = asNameOrNull(v);
    return name === null ? undefined : name;
  });
  return config;
}

let current: RuntimeConfig | null = null;

/** The page's config, read once. */
export function runtimeConfig(): RuntimeConfig {
  current ??= readRuntimeConfig();
  return current;
}

/** Tests: forget the config read so far (the next runtimeConfig() reads the document again). */
export function resetRuntimeConfig(): void {
  current = null;
}
