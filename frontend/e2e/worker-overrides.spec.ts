/**
 * Queues per host on the Workers page: an operator stops a queue on one host, gives it one
 * thread there, starts it again and clears the override, against a worker process of its own
 * (`run_job_workers --hostname <a name of this test's>`); each change shows on the page and in
 * the API's list of overrides. Screenshots at 1440 and 390 px wide.
 */
import { spawn } from "node:child_process";
import { dirname } from "node:path";
import { MANAGE, PYTHON } from "./backend";
import { DESKTOP, PHONE, expect, shot, test } from "./fixtures";

type Override = { hostname: string; queue: string; threads: number | null; stopped: boolean };

test("an operator stops a queue on one host, gives it one thread there, and clears it", async ({
  page,
  api,
  backend,
}) => {
  const queue = `${backend.idleQueue}-hosts`;
  const host = `e2e-host-${process.pid}`;
  await api.post("jobs/", { type: "noop", queue }); // an override is for a queue that exists
  const worker = spawn(PYTHON, [MANAGE, "run_job_workers", "--hostname", host, "--threads", "2", "--queues", queue], {
    cwd: dirname(MANAGE),
    env: { ...process.env, DATABASE_URL: backend.databaseURL, JOB_POLL_INTERVAL_SECONDS: "0.2" },
    stdio: "ignore",
  });
  const overrideOf = async () =>
    (await api.get<Override[]>("workers/overrides/")).find((o) => o.hostname === host && o.queue === queue);
  try {
    await page.goto("/workers");
    const panel = page.locator(`[data-testid="host-overrides"][data-host="${host}"]`);
    const row = panel.locator(`tr[data-override-queue="${queue}"]`);
    // The host is listed once its worker's first heartbeat is in.
    await expect(row.getByTestId("override-threads")).toHaveText(/^2 \(command line\)/, { timeout: 60_000 });

    await row.getByRole("button", { name: "Stop here" }).click();
    await expect(row).toHaveAttribute("data-stopped", "true");
    await expect(row.getByTestId("override-threads")).toHaveText(/^stopped/);
    expect(await overrideOf()).toMatchObject({ threads: null, stopped: true });

    await row.getByRole("spinbutton").fill("1");
    await row.getByRole("button", { name: "Set threads" }).click();
    await expect(row.getByTestId("override-threads")).toHaveText(/^stopped/); // still stopped, now capped too
    await row.getByRole("button", { name: "Start here" }).click();
    await expect(row.getByTestId("override-threads")).toHaveText(/^1 of 2/);
    await expect(row).toHaveAttribute("data-stopped", "false");
    expect(await overrideOf()).toMatchObject({ threads: 1, stopped: false });

    await panel.scrollIntoViewIfNeeded();
    await shot(page, "workers-overrides-1440");
    await page.setViewportSize(PHONE);
    await expect(row.getByRole("button", { name: "Set threads" })).toBeVisible();
    await shot(page, "workers-overrides-390");
    await page.setViewportSize(DESKTOP);

    await row.getByRole("button", { name: "Clear" }).click();
    await expect(row.getByTestId("override-threads")).toHaveText(/^2 \(command line\)/);
    expect(await overrideOf()).toBeUndefined();
  } finally {
    worker.kill("SIGTERM");
  }
});
