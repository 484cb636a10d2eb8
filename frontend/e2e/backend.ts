/**
 * The system under test, started once for the whole run by Playwright's global setup and
 * stopped by its teardown, also on failure:
 *
 *   1. a database of its own, `<your database>_e2e` on the server of DATABASE_URL (or of the
 *      embedded PostgreSQL when DATABASE_URL is unset), created fresh and dropped at the end,
 *      so your development database gets neither the run's user nor its jobs;
 *   2. `manage.py migrate` and an operator user (every permission on the app's models, not staff);
 *   3. `manage.py runserver 127.0.0.1:<E2E_PORT, else a free port>` serving the API and the built
 *      UI (the dashboard's view; its assets from the app's static files), and
 *      `manage.py run_job_workers --threads 4` with fast poll/retry and 5 s leases, claiming only
 *      from a queue private to this run (so other jobs in a shared database neither delay nor
 *      disturb it), with one JOB_PERIODIC entry on that queue.
 *
 * The specs read what they need (base URL, queue, user) from the environment this sets, which
 * Playwright's workers inherit: see `backendInfo()`.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const FRONTEND = resolve(HERE, "..");
const REPO = resolve(FRONTEND, "..");
/** Server and worker logs; screenshots go to test-results/screenshots/. */
export const LOGS = join(FRONTEND, "test-results", "backend");
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
export const PYTHON = process.env.E2E_PYTHON ?? join(REPO, ".venv", "bin", "python");
export const MANAGE = join(REPO, "manage.py");

export type BackendInfo = {
  baseURL: string;
  /** The only queue the run's workers claim from. */
  queue: string;
  /** A queue no worker serves: jobs put there stay queued until the test acts on them. */
  idleQueue: string;
  /** The run's database, for a spec that starts a worker process of its own (workers.spec.ts). */
  databaseURL: string;
  /** The run's JOB_PERIODIC entry (every minute, type noop, on `queue`). */
  schedule: string;
  username: string;
  password: string;
  /** A superuser, for the admin's pages. */
  adminUsername: string;
  adminPassword: string;
};

/** What the global setup started, as the specs see it. */
export function backendInfo(): BackendInfo {
  const raw = process.env.E2E_BACKEND;
  if (!raw) throw new Error("E2E_BACKEND is not set: run the browser tests with `npx playwright test`");
  return JSON.parse(raw) as BackendInfo;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Child = ChildProcess & { label: string; logPath: string; exited: Promise<unknown> };

function log(message: string) {
  console.log(`[e2e backend] ${message}`);
}

function manage(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000) {
  const r = spawnSync(PYTHON, [MANAGE, ...args], { cwd: REPO, env, encoding: "utf8", timeout: timeoutMs });
  if (r.status !== 0)
    throw new Error(`manage.py ${args[0]} failed (exit ${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

function startProcess(label: string, args: string[], env: NodeJS.ProcessEnv): Child {
  const logPath = join(LOGS, `${label}.log`);
  const out = openSync(logPath, "w");
  // detached: its own process group, so that stopping it also stops what it spawned.
  const child = spawn(PYTHON, [MANAGE, ...args], {
    cwd: REPO,
    env,
    detached: true,
    stdio: ["ignore", out, out],
  }) as Child;
  child.label = label;
  child.logPath = logPath;
  child.exited = new Promise((res) => child.once("exit", res));
  log(`started ${label} (pid ${child.pid}); log: ${logPath}`);
  return child;
}

async function stopProcess(child: Child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      /* already gone */
    }
  };
  killGroup("SIGTERM");
  const done = await Promise.race([child.exited.then(() => true), sleep(8000).then(() => false)]);
  if (!done) {
    log(`${child.label} did not stop within 8 s: SIGKILL`);
    killGroup("SIGKILL");
    await Promise.race([child.exited, sleep(2000)]);
  }
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => res(port));
    });
  });
}

function serverURL(): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const r = spawnSync(PYTHON, [join(REPO, "backend", "config", "embedded_pg.py"), "url"], {
    cwd: REPO,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`embedded PostgreSQL did not start:\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim().split("\n").pop()!;
}

function psql(adminURL: string, statement: string) {
  const code = "import sys, psycopg\nwith psycopg.connect(sys.argv[1], autocommit=True) as c: c.execute(sys.argv[2])";
  const r = spawnSync(PYTHON, ["-c", code, adminURL, statement], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${statement}: ${r.stderr}`);
}

async function waitForHttp(url: string, child: Child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`${child.label} exited early (code ${child.exitCode}); see ${child.logPath}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s (${last})`);
}

/** Start everything; the returned function stops it all and drops the database. */
export async function startBackend(): Promise<{ info: BackendInfo; stop: () => Promise<void> }> {
  if (!existsSync(PYTHON)) throw new Error(`no Python at ${PYTHON}; run \`make venv\` (or set E2E_PYTHON).`);
  mkdirSync(LOGS, { recursive: true });
  if (!existsSync(BUILT_INDEX)) {
    log("the dashboard is not built: building it");
    const b = spawnSync("npm", ["run", "build"], { cwd: FRONTEND, stdio: "inherit" });
    if (b.status !== 0) throw new Error("npm run build failed");
  }
  const runId = `${Date.now().toString(36)}-${process.pid}`;
  const port = Number(process.env.E2E_PORT) || (await freePort());
  const info: BackendInfo = {
    baseURL: `http://127.0.0.1:${port}`,
    queue: `e2e-${runId}`,
    idleQueue: `e2e-idle-${runId}`,
    databaseURL: "",
    schedule: `e2e-every-minute-${runId}`,
    username: "e2e-operator",
    password: `e2e-${Math.random().toString(36).slice(2)}-pw`,
    adminUsername: "e2e-admin",
    adminPassword: `e2e-${Math.random().toString(36).slice(2)}-admin-pw`,
  };

  const adminURL = serverURL();
  const url = new URL(adminURL);
  const database = `${decodeURIComponent(url.pathname.slice(1)) || "postgres"}_e2e`;
  const dropDatabase = () => psql(adminURL, `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  dropDatabase(); // a leftover of a run that was killed
  psql(adminURL, `CREATE DATABASE "${database}"`);
  url.pathname = `/${encodeURIComponent(database)}`;
  info.databaseURL = url.toString();
  log(`database ${database} (dropped at the end)`);

  const children: Child[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopProcess));
    try {
      dropDatabase();
    } catch (e) {
      console.error(`e2e: could not drop ${database}: ${(e as Error).message}`);
    }
  };
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: url.toString(),
      PYTHONUNBUFFERED: "1",
      DJANGO_ENV: "development",
      DEBUG: "true",
      ALLOWED_HOSTS: "127.0.0.1,localhost",
      CSRF_TRUSTED_ORIGINS: info.baseURL,
      JOB_POLL_INTERVAL_SECONDS: "0.2",
      JOB_RETRY_BASE_SECONDS: "0.2",
      JOB_LEASE_SECONDS: "5",
      JOB_REAPER_INTERVAL_SECONDS: "1",
      JOB_SHUTDOWN_GRACE_SECONDS: "2",
      JOB_CREATE_RATE: "10000/min",
      // The specs create jobs on queues of their own (made up per run, which the API refuses by
      // default) and at priorities above 0: opened here, as an operator would.
      JOB_API_QUEUES: [
        info.queue,
        `${info.queue}-lost`,
        info.idleQueue,
        ...["nav", "pick", "all", "states", "keyed", "pages", "index", "audit", "hosts"].map(
          (s) => `${info.idleQueue}-${s}`,
        ),
        // The many queues of the screenshot run and the sidebar spec (a real deployment's count).
        ...Array.from({ length: 11 }, (_, i) => `${info.idleQueue}-q${i + 1}`),
        ...Array.from({ length: 11 }, (_, i) => `${info.idleQueue}-side-${String(i + 1).padStart(2, "0")}`),
      ].join(","),
      JOB_API_MAX_PRIORITY: "100",
      JOB_PERIODIC: JSON.stringify({ [info.schedule]: { cron: "* * * * *", type: "noop", queue: info.queue } }),
    };
    manage(["migrate", "--no-input", "-v", "0"], env);
    manage(
      [
        "shell",
        "-c",
        [
          "from django.contrib.auth import get_user_model",
          "from django.contrib.auth.models import Permission",
          "U = get_user_model()",
          `u, _ = U.objects.get_or_create(username=${JSON.stringify(info.username)})`,
          `u.set_password(${JSON.stringify(info.password)}); u.is_active = True; u.save()`,
          "u.user_permissions.set(Permission.objects.filter(content_type__app_label='django_pg_jobqueue'))",
          `a, _ = U.objects.get_or_create(username=${JSON.stringify(info.adminUsername)})`,
          `a.set_password(${JSON.stringify(info.adminPassword)}); a.is_active = a.is_staff = a.is_superuser = True; a.save()`,
        ].join("\n"),
      ],
      env,
    );
    log(`operator ${info.username} ready`);
    const server = startProcess("server", ["runserver", `127.0.0.1:${port}`, "--noreload"], env);
    children.push(server);
    children.push(startProcess("workers", ["run_job_workers", "--threads", "4", "--queues", info.queue], env));
    await waitForHttp(`${info.baseURL}/api/health/`, server);
    log(`backend up at ${info.baseURL}`);
  } catch (e) {
    await stop();
    throw e;
  }
  return { info, stop };
}
