#!/usr/bin/env node
/**
 * End-to-end test of the dashboard in a real browser against the real backend.
 *
 * It starts everything itself and stops it again, also on failure:
 *   1. `manage.py migrate`, an operator user (permissions on jobs, not staff);
 *   2. `manage.py runserver 127.0.0.1:<free port>` serving the API and the built UI (the
 *      dashboard's view; its assets from the app's static files), and
 *      `manage.py run_job_workers --threads 4` with fast poll/retry and 5 s leases,
 *      claiming only from a queue private to this run (so other jobs in a shared database
 *      neither delay nor disturb it);
 *   3. Debian's Chromium (/usr/bin/chromium, or $CHROMIUM_PATH) driven by playwright-core:
 *      log in with the keyboard; create a `sleep` job and watch it go queued -> running with
 *      progress and a lease -> succeeded in the live timeline; create a permanently failing
 *      `fail` job and retry it from the failed-jobs page; cancel a running `sleep` job
 *      (confirmed by keyboard; the badge, status field and timeline agreeing throughout;
 *      the notices that no longer apply gone); a server-side validation error shown next
 *      to its field; a bad filter in the address explained and cleared; refresh paused
 *      (no request) and resumed; the periodic jobs page with this run's JOB_PERIODIC entry;
 *      dark mode from prefers-color-scheme and from the theme control; a screenshot of each
 *      page at 1440x900, some at 390 wide and in dark.
 *
 * Screenshots and server logs go to frontend/e2e-results/. Exit code 0 only when every step
 * passed. The whole run is capped at E2E_TIMEOUT_SECONDS (default 300).
 *
 * It runs in a database of its own, `<your database>_e2e` on the server of DATABASE_URL (or
 * of the embedded PostgreSQL when DATABASE_URL is unset), created fresh and dropped at the
 * end, so your development database gets neither its user nor its jobs.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CHROMIUM, chromiumArgs } from "./chromium.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const FRONTEND = resolve(HERE, "..");
const REPO = resolve(FRONTEND, "..");
const RESULTS = join(FRONTEND, "e2e-results");
// Where `npm run build` writes the dashboard (vite.config.ts): package data of the Django app.
const BUILT_INDEX = join(
  REPO,
  "backend",
  "django_pg_jobqueue",
  "static",
  "django_pg_jobqueue",
  "dashboard",
  "index.html",
);
const PYTHON = process.env.E2E_PYTHON ?? join(REPO, ".venv", "bin", "python");
const MANAGE = join(REPO, "manage.py");
const TIMEOUT_MS = Number(process.env.E2E_TIMEOUT_SECONDS ?? 300) * 1000;
const HEADED = process.env.E2E_HEADED === "1";
const RUN_ID = `${Date.now().toString(36)}-${process.pid}`;
const QUEUE = `e2e-${RUN_ID}`;
// A periodic entry on this run's queue: the workers enqueue its latest due tick at start.
const SCHEDULE = `e2e-every-minute-${RUN_ID}`;
const USERNAME = "e2e-operator";
const PASSWORD = `e2e-${Math.random().toString(36).slice(2)}-pw`;

const started = Date.now();
const children = [];
let browserContext = null;
let profileDir = null;
let cleaningUp = null;
let scratchDatabase = null; // { adminURL, name } once created; dropped by cleanup()

function log(message) {
  const t = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  console.log(`[e2e ${t}s] ${message}`);
}

class StepFailure extends Error {}

function check(condition, message) {
  if (!condition) throw new StepFailure(message);
}

// ---- processes -------------------------------------------------------------------------------

function backendEnv(port) {
  return {
    ...process.env,
    PYTHONUNBUFFERED: "1",
    DJANGO_ENV: "development",
    DEBUG: "true",
    ALLOWED_HOSTS: "127.0.0.1,localhost",
    CSRF_TRUSTED_ORIGINS: `http://127.0.0.1:${port}`,
    JOB_POLL_INTERVAL_SECONDS: "0.2",
    JOB_RETRY_BASE_SECONDS: "0.2",
    JOB_LEASE_SECONDS: "5",
    JOB_REAPER_INTERVAL_SECONDS: "1",
    JOB_SHUTDOWN_GRACE_SECONDS: "2",
    JOB_CREATE_RATE: "10000/min",
    JOB_PERIODIC: JSON.stringify({ [SCHEDULE]: { cron: "* * * * *", type: "noop", queue: QUEUE } }),
  };
}

function manage(args, env, { timeoutMs = 120_000 } = {}) {
  const result = spawnSync(PYTHON, [MANAGE, ...args], { cwd: REPO, env, encoding: "utf8", timeout: timeoutMs });
  if (result.status !== 0) {
    throw new Error(
      `manage.py ${args[0]} failed (exit ${result.status ?? result.signal}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result.stdout;
}

function startProcess(name, args, env) {
  const logPath = join(RESULTS, `${name}.log`);
  const out = openSync(logPath, "w");
  // detached: its own process group, so that stopping it also stops what it spawned
  // (runserver's child, gunicorn workers).
  const child = spawn(PYTHON, [MANAGE, ...args], { cwd: REPO, env, detached: true, stdio: ["ignore", out, out] });
  child.name = name;
  child.logPath = logPath;
  child.exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  children.push(child);
  log(`started ${name} (pid ${child.pid}); log: ${logPath}`);
  return child;
}

async function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const killGroup = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      /* already gone */
    }
  };
  killGroup("SIGTERM");
  const done = await Promise.race([child.exited.then(() => true), sleep(8000).then(() => false)]);
  if (!done) {
    log(`${child.name} did not stop within 8 s: SIGKILL`);
    killGroup("SIGKILL");
    await Promise.race([child.exited, sleep(2000)]);
  }
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

// ---- the run's own database -----------------------------------------------------------------

function serverURL() {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const r = spawnSync(PYTHON, [join(REPO, "backend", "config", "embedded_pg.py"), "url"], {
    cwd: REPO,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`embedded PostgreSQL did not start:\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim().split("\n").pop();
}

function psql(adminURL, statement) {
  const code = "import sys, psycopg\nwith psycopg.connect(sys.argv[1], autocommit=True) as c: c.execute(sys.argv[2])";
  const r = spawnSync(PYTHON, ["-c", code, adminURL, statement], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${statement}: ${r.stderr}`);
}

const dropDatabase = ({ adminURL, name }) => psql(adminURL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);

/** Create `<name>_e2e` next to the configured database; return its URL. */
function createScratchDatabase() {
  const adminURL = serverURL();
  const url = new URL(adminURL);
  const name = `${decodeURIComponent(url.pathname.slice(1)) || "postgres"}_e2e`;
  dropDatabase({ adminURL, name }); // a leftover of a run that was killed
  psql(adminURL, `CREATE DATABASE "${name}"`);
  scratchDatabase = { adminURL, name };
  url.pathname = `/${encodeURIComponent(name)}`;
  log(`database ${name} (dropped at the end)`);
  return url.toString();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitForHttp(url, child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`${child.name} exited early (code ${child.exitCode}); see ${child.logPath}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = e.cause?.code ?? e.message;
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s (${last})`);
}

async function cleanup() {
  cleaningUp ??= (async () => {
    if (browserContext) {
      await Promise.race([browserContext.close().catch(() => {}), sleep(5000)]);
      browserContext = null;
    }
    await Promise.all(children.map(stopProcess));
    if (scratchDatabase) {
      try {
        dropDatabase(scratchDatabase);
      } catch (e) {
        console.error(`e2e: could not drop ${scratchDatabase.name}: ${e.message}`);
      }
      scratchDatabase = null;
    }
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  })();
  return cleaningUp;
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    log(`${signal}: stopping`);
    await cleanup();
    process.exit(130);
  });
}

// ---- the browser steps -------------------------------------------------------------------------

async function shot(page, name, { fullPage = true } = {}) {
  const path = join(RESULTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  log(`screenshot ${path}`);
}

/** The status badge's raw status on a job page. */
const badgeStatus = (page) => page.locator("h1 [data-testid=status-badge]").getAttribute("data-status");

async function waitForStatus(page, status, timeoutMs = 20_000) {
  await page.locator(`h1 [data-testid=status-badge][data-status="${status}"]`).waitFor({ timeout: timeoutMs });
}

async function timelineKinds(page) {
  return page.locator("[data-testid=events-timeline] > li").evaluateAll((items) => items.map((li) => li.dataset.kind));
}

async function createJob(page, { type, payload, extra = {} }) {
  await page.goto("/jobs/new");
  await page.getByLabel("Type").selectOption(type);
  await page.getByTestId("payload-editor").fill(JSON.stringify(payload, null, 2));
  await page.getByLabel("Queue").fill(QUEUE);
  for (const [label, value] of Object.entries(extra)) await page.getByLabel(label, { exact: true }).fill(String(value));
  await page.getByRole("button", { name: "Create job" }).click();
  await page.waitForURL(/\/jobs\/\d+$/, { timeout: 10_000 });
  const id = Number(new URL(page.url()).pathname.split("/").pop());
  log(`created ${type} job #${id}`);
  return id;
}

async function runBrowser(baseURL) {
  const { chromium } = await import("playwright-core");
  profileDir = mkdtempSync(join(tmpdir(), "jobqueue-e2e-chromium-"));
  browserContext = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: !HEADED,
    baseURL,
    viewport: { width: 1440, height: 900 },
    args: chromiumArgs({ headed: HEADED }),
    timeout: 30_000,
  });
  browserContext.setDefaultTimeout(15_000);
  const page = browserContext.pages()[0] ?? (await browserContext.newPage());
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => {
    // The browser logs every 4xx answer ("Failed to load resource"); those are outcomes the test
    // provokes (401 before login, 400 for bad input). Anything else logged as an error is a bug.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource"))
      pageErrors.push(`console: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 500) pageErrors.push(`HTTP ${r.status()} from ${r.request().method()} ${r.url()}`);
  });

  // 1. Login, by keyboard: anonymous visitors land on /login and come back where they wanted.
  log("step: log in");
  await page.goto("/jobs");
  await page.waitForURL(/\/login\?next=%2Fjobs/);
  await page.getByLabel("Username").waitFor();
  await page.getByLabel("Password").fill("wrong-password");
  await page.getByLabel("Username").fill(USERNAME);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page
    .getByRole("alert")
    .filter({ hasText: /invalid username or password/i })
    .waitFor();
  await shot(page, "login");
  await page.getByLabel("Username").focus();
  await page.keyboard.press("Tab");
  check(
    await page.getByLabel("Password").evaluate((el) => el === document.activeElement),
    "Tab from Username should reach Password",
  );
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/jobs$/);
  await page.getByRole("heading", { name: "Jobs" }).waitFor();

  // 2. Server validation errors appear next to their fields.
  log("step: server validation errors next to the fields");
  await page.goto("/jobs/new");
  await page.getByLabel("Type").selectOption("sleep");
  await page.getByLabel("Priority").fill("500");
  await page.getByLabel("Queue").fill("not a valid queue!");
  await page.getByRole("button", { name: "Create job" }).click();
  await page.getByTestId("error-priority").waitFor();
  check(/100/.test(await page.getByTestId("error-priority").innerText()), "the priority error should name the limit");
  await page.getByTestId("error-queue").waitFor();
  check(
    (await page.getByLabel("Priority").getAttribute("aria-invalid")) === "true",
    "priority should be marked invalid",
  );
  check(page.url().endsWith("/jobs/new"), "a refused job must not navigate away");
  await page.getByTestId("payload-editor").fill('{"seconds": 3,}');
  await page.getByTestId("payload-error").waitFor();
  check(await page.getByRole("button", { name: "Create job" }).isDisabled(), "invalid JSON should disable submit");
  await shot(page, "create-job-errors");

  // 3. A sleep job: queued -> running (progress, lease) -> succeeded, live in the timeline.
  log("step: sleep job runs to success");
  const sleepId = await createJob(page, { type: "sleep", payload: { seconds: 3 } });
  await page.getByText("Job created.").waitFor();
  const seen = new Set([await badgeStatus(page)]);
  const progressSeen = [];
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const status = await badgeStatus(page);
    seen.add(status);
    if (status === "running") {
      const pct = Number(await page.getByTestId("job-progress").getAttribute("aria-valuenow"));
      if (pct > 0 && pct < 100 && !progressSeen.includes(pct)) {
        progressSeen.push(pct);
        // A picture of the running job: at the first progress seen, again at the second.
        if (progressSeen.length <= 2) {
          const owner = await page.getByTestId("lease-owner").innerText();
          check(owner.trim().length > 0, "a running job shows its lease owner");
          check(
            /expires in/.test(await page.getByTestId("lease-countdown").innerText()),
            "a running job shows its lease countdown",
          );
          await shot(page, "job-running");
          // The README's picture: the first screen only, small.
          await shot(page, "readme-job-detail", { fullPage: false });
        }
      }
    }
    if (status === "succeeded") break;
    await sleep(150);
  }
  check(seen.has("running"), `job #${sleepId} was never seen running (saw ${[...seen].join(", ")})`);
  check(seen.has("succeeded"), `job #${sleepId} did not succeed within 20 s (saw ${[...seen].join(", ")})`);
  // The detail is polled every second and the job reports every 0.25 s for 3 s: at least one
  // value between 0 and 100 must show (usually two or three), and they only grow.
  check(
    progressSeen.length >= 1,
    `the progress bar should move while running (saw ${progressSeen.join(", ") || "none"})`,
  );
  check(
    progressSeen.every((p, i) => i === 0 || p > progressSeen[i - 1]),
    `progress went backwards: ${progressSeen}`,
  );
  await page.locator('[data-testid=events-timeline] > li[data-kind="succeeded"]').waitFor();
  const kinds = await timelineKinds(page);
  const order = ["created", "claimed", "progress", "succeeded"].map((k) => kinds.indexOf(k));
  check(
    order.every((i) => i >= 0) && order.every((i, n) => n === 0 || i > order[n - 1]),
    `timeline should read created, claimed, progress, succeeded; got ${kinds.join(", ")}`,
  );
  check(
    Number(await page.getByTestId("job-progress").getAttribute("aria-valuenow")) === 100,
    "a succeeded job shows 100%",
  );
  log(
    `job #${sleepId}: statuses ${[...seen].join(" -> ")}; progress ${progressSeen.join("%, ")}%; timeline ${kinds.join(", ")}`,
  );
  await shot(page, "job-succeeded");

  // 4. A permanently failing job lands in the dead letter; retry it from there.
  log("step: failed job, retried from the failed-jobs page");
  const failId = await createJob(page, {
    type: "fail",
    payload: { permanent: true, message: `e2e permanent failure ${RUN_ID}` },
  });
  await waitForStatus(page, "failed");
  await page.getByText(`e2e permanent failure ${RUN_ID}`).first().waitFor();
  await page.getByRole("link", { name: /Failed jobs/ }).click();
  await page.getByRole("heading", { name: "Failed jobs" }).waitFor();
  const row = page.locator(`[data-testid=failed-table] tr[data-job-id="${failId}"]`);
  await row.waitFor();
  check((await row.innerText()).includes(`e2e permanent failure ${RUN_ID}`), "the failed row shows the last error");
  await shot(page, "failed-jobs");
  await row.getByRole("checkbox").check();
  await page.getByRole("button", { name: "Retry selected (1)" }).click();
  await page.getByTestId("retry-outcome").filter({ hasText: "Retried 1 job" }).waitFor();
  await page.goto(`/jobs/${failId}`);
  await page.locator('[data-testid=events-timeline] > li[data-kind="retried"]').waitFor();
  // Permanent: it fails again on the retry, with a second attempt counted.
  await waitForStatus(page, "failed");
  await page.locator('[data-testid=events-timeline] > li[data-kind="failed"]').nth(1).waitFor();
  const failKinds = await timelineKinds(page);
  check(
    failKinds.indexOf("retried") > failKinds.indexOf("failed"),
    `retried should follow the first failure: ${failKinds}`,
  );
  log(`job #${failId}: timeline ${failKinds.join(", ")}`);
  await shot(page, "job-failed-retried");

  // 5. Cancel a running job.
  log("step: cancel a running job");
  const longId = await createJob(page, { type: "sleep", payload: { seconds: 30 } });
  await waitForStatus(page, "running");
  await page.getByTestId("lease-owner").waitFor();
  // Meanwhile the overview shows the worker process running it.
  await page.getByRole("link", { name: "Overview" }).click();
  await page.getByRole("heading", { name: "Throughput, jobs per minute" }).waitFor();
  await page.locator(".recharts-surface").first().waitFor();
  await page
    .locator("section[aria-labelledby=workers-title]")
    .getByRole("link", { name: `#${longId}` })
    .waitFor();
  check(
    Number(await page.getByTestId("stat-active-workers").innerText()) >= 1,
    "the overview counts the worker process",
  );
  check(Number(await page.getByTestId("stat-running").innerText()) >= 1, "the overview counts the running job");
  await sleep(300);
  await shot(page, "overview");
  await shot(page, "readme-overview", { fullPage: false });
  // Pause and resume this run's queue from the Queues panel.
  const queueRow = page.locator(`[data-testid=queues-table] tr[data-queue="${QUEUE}"]`);
  await queueRow.getByRole("button", { name: `Pause queue ${QUEUE}` }).click();
  await queueRow.getByText("paused", { exact: true }).waitFor();
  await queueRow.getByRole("button", { name: `Resume queue ${QUEUE}` }).click();
  await queueRow.getByText("active", { exact: true }).waitFor();
  await page.goBack();
  await waitForStatus(page, "running");
  const cancelButton = page.getByRole("button", { name: "Cancel", exact: true });
  // A running job asks first; Escape keeps it running and gives the focus back to Cancel.
  await cancelButton.click();
  const confirm = page.getByTestId("confirm-cancel");
  await confirm.waitFor();
  check(
    await confirm.getByRole("button", { name: "Yes, cancel it" }).evaluate((el) => el === document.activeElement),
    "the confirmation's button should take the focus",
  );
  await shot(page, "job-confirm-cancel", { fullPage: false });
  await page.keyboard.press("Escape");
  await confirm.waitFor({ state: "detached" });
  check(
    await cancelButton.evaluate((el) => el === document.activeElement),
    "Escape should give the focus back to Cancel",
  );
  check((await badgeStatus(page)) === "running", "Escape must not cancel the job");
  // By keyboard this time: Enter opens the confirmation, Enter confirms.
  await page.keyboard.press("Enter");
  await confirm.waitFor();
  await page.keyboard.press("Enter");
  await page.getByTestId("action-outcome").waitFor();
  const outcome = await page.getByTestId("action-outcome").innerText();
  check(/cancel/i.test(outcome) && !/could not/i.test(outcome), `cancel outcome: ${outcome}`);
  // The notice sits under the title row; the title, badge and buttons stay on one line.
  const head = await page.locator(".page-head").boundingBox();
  const notice = await page.getByTestId("action-outcome").boundingBox();
  const title = await page.locator("h1").boundingBox();
  const button = await cancelButton.boundingBox();
  check(
    notice.y >= head.y + head.height - 1,
    `the outcome notice should be below the title row (${JSON.stringify({ head, notice })})`,
  );
  check(head.height < 80, `the title row should not wrap at 1440 px (height ${head.height})`);
  check(button.y < title.y + title.height && button.y + button.height > title.y, "title and buttons share a line");
  await shot(page, "job-cancel-requested", { fullPage: false });
  // Until it ends, every part of the page tells the same state: the timeline never shows the
  // end while the badge and the status field do not.
  const seenStates = new Set();
  const stateDeadline = Date.now() + 15_000;
  while (Date.now() < stateDeadline) {
    const snap = await page.evaluate(() => {
      const badge = document.querySelector("h1 [data-testid=status-badge]");
      const fields = [...document.querySelectorAll("[data-testid=job-fields] dt")];
      const statusField = fields.find((dt) => dt.textContent === "status")?.nextElementSibling?.textContent;
      const ended = !!document.querySelector('[data-testid=events-timeline] > li[data-kind="cancelled"]');
      return { badge: badge?.getAttribute("data-status"), label: badge?.textContent, statusField, ended };
    });
    seenStates.add(`${snap.label}/${snap.statusField}/${snap.ended ? "Cancelled" : "-"}`);
    check(snap.badge === snap.statusField, `badge ${snap.badge} but status field ${snap.statusField}`);
    check(!snap.ended || snap.badge === "cancelled", `the timeline says Cancelled while the badge says ${snap.label}`);
    if (snap.badge === "cancelled") break;
    await sleep(50);
  }
  await waitForStatus(page, "cancelled", 1_000);
  const cancelKinds = await timelineKinds(page);
  check(
    cancelKinds.includes("cancel_requested") && cancelKinds.at(-1) === "cancelled",
    `timeline should end cancel_requested ... cancelled; got ${cancelKinds.join(", ")}`,
  );
  check(await cancelButton.isDisabled(), "a cancelled job cannot be cancelled again");
  check(
    !(await page.getByRole("button", { name: "Retry", exact: true }).isDisabled()),
    "a cancelled job can be retried",
  );
  // The notices that no longer apply are gone; the Lease card says what is true.
  check((await page.getByText("Cancel requested:").count()) === 0, "'Cancel requested' should go once cancelled");
  check((await page.getByTestId("created-notice").count()) === 0, "'Job created.' should go once the job ended");
  check(/^Cancelled/.test(await page.getByTestId("action-outcome").innerText()), "the outcome says Cancelled");
  const leaseText = await page.locator("section[aria-labelledby=lease-title]").innerText();
  check(/the job was cancelled/.test(leaseText) && !/Released/.test(leaseText), `lease card: ${leaseText}`);
  log(`job #${longId}: ${outcome}; states ${[...seenStates].join(" -> ")}; timeline ${cancelKinds.join(", ")}`);
  await shot(page, "job-cancelled");
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(300);
  await shot(page, "job-cancelled-phone", { fullPage: false });
  await page.setViewportSize({ width: 1440, height: 900 });

  // 6. The list, filtered to this run's queue, and the overview.
  log("step: jobs list and overview");
  await page.goto(`/jobs?queue=${encodeURIComponent(QUEUE)}`);
  for (const [id, status] of [
    [sleepId, "succeeded"],
    [failId, "failed"],
    [longId, "cancelled"],
  ]) {
    const r = page.locator(`[data-testid=jobs-table] tr[data-job-id="${id}"]`);
    await r.waitFor();
    check(
      (await r.getByTestId("status-badge").getAttribute("data-status")) === status,
      `list: job #${id} should be ${status}`,
    );
  }
  await shot(page, "jobs");
  await page.goto("/");
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  // The activity feed has this run's last event.
  await page
    .locator("section[aria-labelledby=activity-title]")
    .getByRole("link", { name: `#${longId}` })
    .first()
    .waitFor();
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(300);
  await shot(page, "overview-phone");

  await page.setViewportSize({ width: 1440, height: 900 });

  // 7. A bad filter in the address: what is wrong with it, and a way to clear it.
  log("step: a bad filter in the address");
  await page.goto(`/jobs?status=bogus&queue=${encodeURIComponent(QUEUE)}`);
  const problem = page.getByTestId("filter-problem");
  await problem.waitFor();
  const problemText = await problem.innerText();
  check(/Status “bogus”/.test(problemText), `the problem names the status filter: ${problemText}`);
  check((await page.getByText("Connection problem").count()) === 0, "a refused filter is not a connection problem");
  check(
    (await page.getByLabel("Status", { exact: true }).inputValue()) === "bogus",
    "the dropdown shows the value asked for",
  );
  await shot(page, "jobs-bad-filter", { fullPage: false });
  await problem.getByRole("button", { name: "Clear status" }).click();
  await page.waitForURL(new RegExp(`/jobs\\?queue=${encodeURIComponent(QUEUE)}$`));
  await page.locator(`[data-testid=jobs-table] tr[data-job-id="${longId}"]`).waitFor();
  await page.goto("/jobs?priority=abc");
  check(/Priority “abc”/.test(await page.getByTestId("filter-problem").innerText()), "?priority=abc is not ignored");

  // 8. Refresh: paused, the page sends no request; resumed, it polls again.
  log("step: refresh control");
  await page.goto(`/jobs?queue=${encodeURIComponent(QUEUE)}`);
  await page.locator(`[data-testid=jobs-table] tr[data-job-id="${longId}"]`).waitFor();
  const listRequests = [];
  const onRequest = (r) => {
    if (new URL(r.url()).pathname.endsWith("/api/v1/jobs/")) listRequests.push(Date.now());
  };
  page.on("request", onRequest);
  await page.getByRole("button", { name: "Pause", exact: true }).click();
  await page.getByTestId("live").filter({ hasText: "Paused" }).waitFor();
  const pausedAt = Date.now();
  await sleep(7_000);
  check(
    listRequests.filter((t) => t > pausedAt + 200).length === 0,
    `paused, yet ${listRequests.length} list requests`,
  );
  await page.getByRole("button", { name: "Resume", exact: true }).click();
  await page.getByTestId("live").filter({ hasText: /^Live/ }).waitFor();
  const resumedAt = Date.now();
  while (Date.now() - resumedAt < 5_000 && !listRequests.some((t) => t >= resumedAt)) await sleep(100);
  check(
    listRequests.some((t) => t >= resumedAt),
    "resumed, the list polls again",
  );
  await page.getByLabel("Refresh", { exact: true }).selectOption({ label: "15 s" });
  await page.reload();
  check((await page.getByLabel("Refresh", { exact: true }).inputValue()) === "15000", "the chosen rate is remembered");
  await page.getByLabel("Refresh", { exact: true }).selectOption("auto");
  page.off("request", onRequest);

  // 9. Periodic jobs: the run's schedule (JOB_PERIODIC), its cron, runs and jobs.
  log("step: periodic jobs");
  await page.getByRole("link", { name: "Periodic jobs" }).click();
  await page.getByRole("heading", { name: "Periodic jobs" }).waitFor();
  const scheduleRow = page.locator(`[data-testid=schedules-table] tr[data-schedule="${SCHEDULE}"]`);
  await scheduleRow.waitFor();
  check((await scheduleRow.getByTestId("schedule-cron").innerText()) === "* * * * *", "the schedule shows its cron");
  check(/^in /.test(await scheduleRow.getByTestId("schedule-next").innerText()), "the schedule shows its next run");
  // A worker enqueues the latest due tick when it starts: the last run links to its job.
  await scheduleRow.getByTestId("schedule-last").getByRole("link").waitFor({ timeout: 20_000 });
  await shot(page, "schedules");
  await scheduleRow.getByRole("link", { name: "noop jobs" }).click();
  await page.waitForURL(/\/jobs\?type=noop&queue=/);
  await page.locator("[data-testid=jobs-table] tbody tr").first().waitFor();
  await page.goto("/schedules");
  await scheduleRow.waitFor();
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(300);
  await shot(page, "schedules-phone", { fullPage: false });
  await page.setViewportSize({ width: 1440, height: 900 });

  // 10. Dark: the system's preference, and the theme control (remembered).
  log("step: dark mode");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto("/");
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.locator(".recharts-surface").first().waitFor();
  const panelDark = await page.evaluate(() => getComputedStyle(document.querySelector(".panel")).backgroundColor);
  check(panelDark === "rgb(23, 28, 36)", `a dark system gets dark panels (got ${panelDark})`);
  await sleep(300);
  await shot(page, "overview-dark");
  await page.goto(`/jobs/${failId}`);
  await waitForStatus(page, "failed");
  await shot(page, "job-failed-dark");
  await page.goto(`/jobs?queue=${encodeURIComponent(QUEUE)}`);
  await page.locator(`[data-testid=jobs-table] tr[data-job-id="${longId}"]`).waitFor();
  await shot(page, "jobs-dark");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/");
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await sleep(500);
  await shot(page, "overview-phone-dark", { fullPage: false });
  await page.setViewportSize({ width: 1440, height: 900 });
  // The control overrides the system, and stays after a reload.
  await page.getByLabel("Theme", { exact: true }).selectOption("light");
  await page.reload();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  const panelLight = await page.evaluate(() => getComputedStyle(document.querySelector(".panel")).backgroundColor);
  check(panelLight === "rgb(255, 255, 255)", `Light chosen on a dark system: light panels (got ${panelLight})`);
  check((await page.getByLabel("Theme", { exact: true }).inputValue()) === "light", "the theme choice is remembered");
  await page.getByLabel("Theme", { exact: true }).selectOption("system");
  await page.emulateMedia({ colorScheme: "light" });

  // Log out: the session ends and the pages ask for a login again.
  await page.getByRole("button", { name: "Log out" }).click();
  await page.waitForURL(/\/login/);
  await page.goto(`/jobs/${sleepId}`);
  await page.waitForURL(new RegExp(`/login\\?next=%2Fjobs%2F${sleepId}$`));

  check(pageErrors.length === 0, `the page reported errors:\n  ${pageErrors.join("\n  ")}`);
}

// ---- main ------------------------------------------------------------------------------------------

async function main() {
  if (!existsSync(CHROMIUM)) {
    console.error(
      `e2e: Chromium not found at ${CHROMIUM}. Install it (Debian: apt-get install chromium) or set CHROMIUM_PATH.`,
    );
    return 2;
  }
  if (!existsSync(PYTHON)) {
    console.error(`e2e: no Python at ${PYTHON}; run \`make venv\` (or set E2E_PYTHON).`);
    return 2;
  }
  rmSync(RESULTS, { recursive: true, force: true });
  mkdirSync(RESULTS, { recursive: true });
  if (!existsSync(BUILT_INDEX)) {
    log("the dashboard is not built: building it");
    const b = spawnSync("npm", ["run", "build"], { cwd: FRONTEND, stdio: "inherit" });
    if (b.status !== 0) throw new Error("npm run build failed");
  }

  const port = await freePort();
  const baseURL = `http://127.0.0.1:${port}`;
  const env = { ...backendEnv(port), DATABASE_URL: createScratchDatabase() };
  log("migrate");
  manage(["migrate", "--no-input", "-v", "0"], env);
  manage(
    [
      "shell",
      "-c",
      [
        "from django.contrib.auth import get_user_model",
        "from django.contrib.auth.models import Permission",
        "U = get_user_model()",
        `u, _ = U.objects.get_or_create(username=${JSON.stringify(USERNAME)})`,
        `u.set_password(${JSON.stringify(PASSWORD)}); u.is_active = True; u.save()`,
        "u.user_permissions.set(Permission.objects.filter(content_type__app_label='django_pg_jobqueue'))",
      ].join("\n"),
    ],
    env,
  );
  log(`operator ${USERNAME} ready`);

  const server = startProcess("server", ["runserver", `127.0.0.1:${port}`, "--noreload"], env);
  startProcess("workers", ["run_job_workers", "--threads", "4", "--queues", QUEUE], env);
  await waitForHttp(`${baseURL}/api/health/`, server);
  const index = await fetch(`${baseURL}/jobs/1`);
  const indexHtml = await index.text();
  check(index.ok && indexHtml.includes('id="root"'), "Django should serve the dashboard for client routes");
  check(indexHtml.includes('id="jobqueue-config"'), "the dashboard's page should carry its runtime config");
  log(`backend up at ${baseURL}`);

  await runBrowser(baseURL);
  return 0;
}

let timedOut = false;
const timer = setTimeout(async () => {
  timedOut = true;
  console.error(`e2e: FAILED — timed out after ${TIMEOUT_MS / 1000} s`);
  if (browserContext) {
    const page = browserContext.pages()[0];
    if (page)
      await Promise.race([
        page.screenshot({ path: join(RESULTS, "timeout.png"), fullPage: true }).catch(() => {}),
        sleep(3000),
      ]);
  }
  await cleanup();
  process.exit(1);
}, TIMEOUT_MS);

let exitCode = 1;
try {
  exitCode = await main();
  if (exitCode === 0) log(`PASSED in ${((Date.now() - started) / 1000).toFixed(1)} s; screenshots in ${RESULTS}`);
} catch (error) {
  exitCode = 1;
  // After a timeout, the steps still in flight fail as their browser closes: already reported.
  if (timedOut) await new Promise(() => {});
  console.error(`e2e: FAILED — ${error instanceof StepFailure ? error.message : (error.stack ?? error)}`);
  if (browserContext) {
    const page = browserContext.pages()[0];
    if (page) {
      console.error(`e2e: at ${page.url()}`);
      await Promise.race([
        page.screenshot({ path: join(RESULTS, "failure.png"), fullPage: true }).catch(() => {}),
        sleep(3000),
      ]);
      writeFileSync(join(RESULTS, "failure.html"), await page.content().catch(() => ""));
    }
  }
  for (const c of children) console.error(`e2e: ${c.name} log: ${c.logPath}`);
} finally {
  await cleanup();
  clearTimeout(timer);
}
process.exit(exitCode);
