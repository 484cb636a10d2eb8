/** The create-job form: the server's validation errors next to their fields, bad JSON, success. */
import { createJobInForm, expect, shot, test, waitForStatus } from "./fixtures";

test("server validation errors appear next to their fields; nothing is created", async ({ page }) => {
  await page.goto("/jobs/new");
  await page.getByLabel("Type").selectOption("sleep");
  await page.getByLabel("Priority").fill("500");
  await page.getByLabel("Queue").fill("not a valid queue!");
  await page.getByRole("button", { name: "Create job" }).click();
  await expect(page.getByTestId("error-priority"), "the priority error names the limit").toContainText("100");
  await expect(page.getByTestId("error-queue")).toBeVisible();
  await expect(page.getByLabel("Priority")).toHaveAttribute("aria-invalid", "true");
  expect(page.url(), "a refused job must not navigate away").toMatch(/\/jobs\/new$/);
  await page.getByTestId("payload-editor").fill('{"seconds": 3,}');
  await expect(page.getByTestId("payload-error")).toBeVisible();
  await expect(page.getByRole("button", { name: "Create job" }), "invalid JSON disables submit").toBeDisabled();
  await shot(page, "create-job-errors");
});

test("a valid job is created and its page says so", async ({ page, backend, api }) => {
  // On a queue no worker serves: it stays queued, and the notice stays while it does.
  const id = await createJobInForm(page, backend, {
    type: "noop",
    payload: { hello: "world" },
    queue: backend.idleQueue,
  });
  await expect(page.getByTestId("created-notice")).toContainText("Job created.");
  await waitForStatus(page, "queued");
  await expect(page.getByTestId("job-payload")).toContainText('"hello": "world"');
  const job = await api.job(id);
  expect(job.type).toBe("noop");
  expect(job.queue).toBe(backend.idleQueue);
  await api.cancel(id);
  await waitForStatus(page, "cancelled");
  await expect(page.getByTestId("created-notice"), "'Job created.' goes once the job ended").toHaveCount(0);
});
