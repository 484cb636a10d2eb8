/**
 * The specs' shared fixtures:
 *
 * - `backend`: what the global setup started (base URL, the run's queues, the operator);
 * - `page`: logged in as the operator (a session made once per worker through the API), at
 *   1440x900; `test.use({ loggedIn: false })` for an anonymous one. Each test fails when the page
 *   logs an error, throws, or gets a 5xx answer;
 * - `api`: the same operator through the JSON API, to set up jobs and read their state;
 * - `shot(page, name)`: a full-page screenshot to test-results/screenshots/<name>.png.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type APIRequestContext,
  type BrowserContextOptions,
  type Page,
  expect,
  test as base,
  request,
} from "@playwright/test";
import { type BackendInfo, FRONTEND, backendInfo } from "./backend";

export { expect };

export const SCREENSHOTS = join(FRONTEND, "test-results", "screenshots");
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1440, height: 900 };

export type Job = {
  id: number;
  type: string;
  status: string;
  queue: string;
  attempts: number;
  last_error: string | null;
  [key: string]: unknown;
};

type StorageState = Exclude<BrowserContextOptions["storageState"], string | undefined>;

const API = "/api/v1/";

/** The operator's session through the JSON API, with Django's CSRF token on every write. */
export class JobsApi {
  constructor(
    readonly request: APIRequestContext,
    readonly backend: BackendInfo,
  ) {}

  private async csrf(): Promise<Record<string, string>> {
    const state = await this.request.storageState();
    let token = state.cookies.find((c) => c.name === "csrftoken")?.value;
    if (!token) {
      const r = await this.request.get(`${API}auth/csrf/`);
      token = ((await r.json()) as { csrf_token: string }).csrf_token;
    }
    return { "X-CSRFToken": token, Referer: this.backend.baseURL + "/" };
  }

  async post<T>(path: string, data: unknown, expected = [200, 201]): Promise<T> {
    const r = await this.request.post(API + path, { data, headers: await this.csrf() });
    const body = await r.text();
    expect(expected, `POST ${path} answered ${r.status()}: ${body}`).toContain(r.status());
    return (body ? JSON.parse(body) : null) as T;
  }

  async get<T>(path: string): Promise<T> {
    const r = await this.request.get(API + path);
    expect(r.ok(), `GET ${path} answered ${r.status()}`).toBe(true);
    return (await r.json()) as T;
  }

  /** A job on the run's queue (worked at once) unless `queue` says otherwise. */
  createJob(type: string, payload: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
    return this.post<Job>("jobs/", { type, payload, queue: this.backend.queue, ...extra });
  }

  /** `count` jobs of one kind in one request (jobs/bulk/); on `queue`, else the run's. */
  async createJobs(
    count: number,
    type: string,
    payload: Record<string, unknown> = {},
    extra: Record<string, unknown> = {},
  ) {
    const jobs = Array.from({ length: count }, () => ({ type, payload, queue: this.backend.queue, ...extra }));
    return (await this.post<{ jobs: Job[] }>("jobs/bulk/", { jobs })).jobs;
  }

  job(id: number) {
    return this.get<Job>(`jobs/${id}/`);
  }

  /** Wait (polling the API) until the job is in one of `statuses`. */
  async waitForStatus(id: number, statuses: string | string[], timeoutMs = 20_000): Promise<Job> {
    const want = ([] as string[]).concat(statuses);
    let job: Job | null = null;
    await expect
      .poll(
        async () => {
          job = await this.job(id);
          return want.includes(job.status);
        },
        { timeout: timeoutMs, message: `job #${id} should become ${want.join(" or ")}` },
      )
      .toBe(true);
    return job!;
  }

  cancel(id: number) {
    return this.post<unknown>(`jobs/${id}/cancel/`, {}, [200, 202]);
  }

  exists = async (id: number) => (await this.request.get(`${API}jobs/${id}/`)).status() !== 404;
}

async function login(baseURL: string, backend: BackendInfo): Promise<StorageState> {
  const ctx = await request.newContext({ baseURL });
  const r = await ctx.get(`${API}auth/csrf/`);
  const { csrf_token } = (await r.json()) as { csrf_token: string };
  const answer = await ctx.post(`${API}auth/login/`, {
    data: { username: backend.username, password: backend.password },
    headers: { "X-CSRFToken": csrf_token, Referer: baseURL + "/" },
  });
  if (!answer.ok()) throw new Error(`login as ${backend.username}: HTTP ${answer.status()} ${await answer.text()}`);
  const state = await ctx.storageState();
  await ctx.dispose();
  return state;
}

type TestFixtures = {
  loggedIn: boolean;
  api: JobsApi;
  pageErrors: string[];
};
type WorkerFixtures = { backend: BackendInfo; session: StorageState };

export const test = base.extend<TestFixtures, WorkerFixtures>({
  backend: [async ({}, use) => use(backendInfo()), { scope: "worker" }],
  session: [async ({ backend }, use) => use(await login(backend.baseURL, backend)), { scope: "worker" }],
  baseURL: async ({ backend }, use) => use(backend.baseURL),
  loggedIn: [true, { option: true }],
  storageState: async ({ loggedIn, session }, use) => use(loggedIn ? session : { cookies: [], origins: [] }),
  api: async ({ backend, session }, use) => {
    const ctx = await request.newContext({ baseURL: backend.baseURL, storageState: session });
    await use(new JobsApi(ctx, backend));
    await ctx.dispose();
  },
  // Every test: the page neither throws nor logs an error, and the server answers no 5xx.
  pageErrors: [
    async ({ page }, use) => {
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("console", (m) => {
        // The browser logs every 4xx answer ("Failed to load resource"); those are outcomes the
        // tests provoke (401 before login, 400 for bad input). Anything else is a bug.
        if (m.type() === "error" && !m.text().startsWith("Failed to load resource"))
          errors.push(`console: ${m.text()}`);
      });
      page.on("response", (r) => {
        if (r.status() >= 500) errors.push(`HTTP ${r.status()} from ${r.request().method()} ${r.url()}`);
      });
      await use(errors);
      expect(errors, "the page reported errors").toEqual([]);
    },
    { auto: true },
  ],
});

/** A screenshot to test-results/screenshots/<name>.png (full page unless told). */
export async function shot(page: Page, name: string, { fullPage = true } = {}) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage, animations: "disabled", caret: "hide" });
}

/** The status badge in a job page's title. */
export const badge = (page: Page) => page.locator("h1 [data-testid=status-badge]");

export async function waitForStatus(page: Page, status: string, timeout = 20_000) {
  await expect(badge(page)).toHaveAttribute("data-status", status, { timeout });
}

export const timelineKinds = (page: Page) =>
  page
    .locator("[data-testid=events-timeline] > li")
    .evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.kind));

/** Create a job through the form (on the run's queue); its id once the page has moved to it. */
export async function createJobInForm(
  page: Page,
  backend: BackendInfo,
  {
    type,
    payload,
    queue = backend.queue,
    extra = {},
  }: { type: string; payload: unknown; queue?: string; extra?: Record<string, string | number> },
) {
  await page.goto("/jobs/new");
  await page.getByLabel("Type").selectOption(type);
  await page.getByTestId("payload-editor").fill(JSON.stringify(payload, null, 2));
  await page.getByLabel("Queue").fill(queue);
  for (const [label, value] of Object.entries(extra)) await page.getByLabel(label, { exact: true }).fill(String(value));
  await page.getByRole("button", { name: "Create job" }).click();
  await page.waitForURL(/\/jobs\/\d+$/, { timeout: 10_000 });
  return Number(new URL(page.url()).pathname.split("/").pop());
}
