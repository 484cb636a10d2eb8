/**
 * The Workers page: a worker process killed with SIGKILL shows as lost within two of its
 * heartbeat intervals (plus one refresh of the page), with the job it held still naming one of
 * its threads as owner.
 */
import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { MANAGE, PYTHON } from "./backend";
import { expect, test } from "./fixtures";

// The spec's worker renews (and beats) every min(lease / 3, 2 s) = 2 s; its job's lease
// outlasts the test, so that the job still names its dead owner when the test looks.
const LEASE_SECONDS = 30;
const HEARTBEAT_SECONDS = 2;
const PAGE_POLL_SECONDS = 2; // workersOptions() refreshes the page's data this often

test("a worker killed with SIGKILL shows as lost within two heartbeat intervals, with what it held", async ({
  page,
  api,
  backend,
}) => {
  const queue = `${backend.queue}-lost`;
  const worker = spawn(PYTHON, [MANAGE, "run_job_workers", "--threads", "2", "--queues", queue], {
    cwd: dirname(MANAGE),
    env: {
      ...process.env,
      DATABASE_URL: backend.databaseURL,
      JOB_LEASE_SECONDS: String(LEASE_SECONDS),
      JOB_POLL_INTERVAL_SECONDS: "0.2",
    },
    stdio: "ignore",
  });
  const pid = worker.pid!;
  try {
    const { id } = await api.post<{ id: number }>("jobs/", { type: "sleep", payload: { seconds: 120 }, queue });
    await page.goto("/");
    await page.getByRole("link", { name: "Workers" }).click();
    await expect(page.getByRole("heading", { name: "Workers" })).toBeVisible();
    const row = page.locator(`tr[data-worker$="-${pid}"]`);
    await expect(row).toHaveAttribute("data-state", "alive", { timeout: 60_000 });
    await expect(row.getByTestId("worker-jobs").getByRole("link", { name: `#${id}` })).toBeVisible({
      timeout: 30_000,
    });

    worker.kill("SIGKILL");
    const killedAt = Date.now();
    await expect(row).toHaveAttribute("data-state", "lost", { timeout: 30_000 });
    const seconds = (Date.now() - killedAt) / 1000;
    expect(seconds).toBeLessThanOrEqual(2 * HEARTBEAT_SECONDS + PAGE_POLL_SECONDS + 1);
    // Still listed, with the job it held, which still names one of its threads as owner.
    const job = await api.job(id);
    expect(String(job.locked_by)).toMatch(new RegExp(`^${hostname()}-${pid}-\\d+$`));
    await expect(row.getByTestId("worker-jobs").getByRole("link", { name: `#${id}` })).toBeVisible();
    await expect(row.getByTestId("worker-jobs")).toContainText("held when it was lost");
    console.log(`workers: killed worker shown lost ${seconds.toFixed(1)} s after SIGKILL`);
    await api.post(`jobs/${id}/cancel/`, {});
  } finally {
    if (worker.exitCode === null && worker.signalCode === null) worker.kill("SIGKILL");
  }
});
