/**
 * A job's page: the live timeline of a job that runs to success, the cancellation of a running
 * job (asked first; badge, status field and timeline agreeing throughout), and deleting a
 * finished job.
 */
import { PHONE, DESKTOP, badge, createJobInForm, expect, shot, test, timelineKinds, waitForStatus } from "./fixtures";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("a sleep job goes queued -> running (progress, lease) -> succeeded, live", async ({ page, backend }) => {
  const id = await createJobInForm(page, backend, { type: "sleep", payload: { seconds: 3 } });
  await expect(page.getByTestId("created-notice")).toContainText("Job created.");
  const seen = new Set<string | null>([await badge(page).getAttribute("data-status")]);
  const progressSeen: number[] = [];
  const countdownsSeen: string[] = [];
  const ownersSeen: string[] = [];
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const status = await badge(page).getAttribute("data-status");
    seen.add(status);
    if (status === "running") {
      const pct = Number(await page.getByTestId("job-progress").getAttribute("aria-valuenow"));
      if (pct > 0 && pct < 100 && !progressSeen.includes(pct)) {
        progressSeen.push(pct);
        if (progressSeen.length <= 2) {
          // Read now, not awaited: a 3 s job may end while an assertion waits, and its page
          // then rightly shows no lease (seen under load, for the owner and the countdown).
          const owner = await page
            .getByTestId("lease-owner")
            .innerText({ timeout: 1000 })
            .catch(() => null);
          if (owner !== null) ownersSeen.push(owner.trim());
          const text = await page
            .getByTestId("lease-countdown")
            .textContent({ timeout: 1000 })
            .catch(() => null);
          if (text !== null) countdownsSeen.push(text);
          if (progressSeen.length === 1) await shot(page, "job-running");
        }
      }
    }
    if (status === "succeeded") break;
    await sleep(150);
  }
  expect([...seen], `job #${id} is seen running`).toContain("running");
  expect([...seen], `job #${id} succeeds within 20 s`).toContain("succeeded");
  // The detail is polled every second and the job reports every 0.25 s for 3 s: at least one
  // value between 0 and 100 shows (usually two or three), and they only grow.
  expect(progressSeen.length, "the progress bar moves while running").toBeGreaterThanOrEqual(1);
  expect(
    ownersSeen.some((owner) => owner !== ""),
    `a running job shows its lease owner (saw ${JSON.stringify(ownersSeen)})`,
  ).toBe(true);
  expect(
    countdownsSeen.some((text) => text.includes("expires in")),
    `a running job shows its lease countdown (saw ${JSON.stringify(countdownsSeen)})`,
  ).toBe(true);
  expect(progressSeen, "progress never goes backwards").toEqual([...progressSeen].sort((a, b) => a - b));
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="succeeded"]')).toBeVisible();
  const kinds = await timelineKinds(page);
  // The attempt's start is no event of its own: the timeline derives its "started" row from
  // the outcome (or, while it runs, from the job row) and puts it before the attempt's events.
  const order = ["created", "started", "progress", "succeeded"].map((k) => kinds.indexOf(k));
  expect(
    order.every((i) => i >= 0) && order.every((i, n) => n === 0 || i > order[n - 1]),
    `timeline reads created, started, progress, succeeded; got ${kinds.join(", ")}`,
  ).toBe(true);
  await expect(page.getByTestId("job-progress"), "a succeeded job shows 100%").toHaveAttribute("aria-valuenow", "100");
  await expect(page.getByTestId("created-notice"), "'Job created.' goes once the job ended").toHaveCount(0);
  await shot(page, "job-succeeded");
});

test("a permanently failing job shows its error", async ({ page, backend }) => {
  const message = `e2e permanent failure ${test.info().testId}`;
  await createJobInForm(page, backend, { type: "fail", payload: { permanent: true, message } });
  await waitForStatus(page, "failed");
  await expect(page.getByText(message).first()).toBeVisible();
  await expect(page.getByRole("button", { name: "Retry", exact: true })).toBeEnabled();
  await expect(page.getByRole("button", { name: "Cancel", exact: true })).toBeDisabled();
  const lease = await page.locator("section[aria-labelledby=lease-title]").innerText();
  expect(lease, "the Lease card does not use the event kind's word").not.toMatch(/Released/);
  await shot(page, "job-failed");
});

test("cancel a running job: asked first, by mouse and keyboard; one state everywhere", async ({ page, api }) => {
  const { id } = await api.createJob("sleep", { seconds: 120 });
  await page.goto(`/jobs/${id}`);
  await waitForStatus(page, "running");
  await expect(page.getByTestId("lease-owner")).toBeVisible();
  const cancelButton = page.getByRole("button", { name: "Cancel", exact: true });
  // A running job asks first; Escape keeps it running and gives the focus back to Cancel.
  await cancelButton.click();
  const confirm = page.getByTestId("confirm-cancel");
  await expect(confirm).toBeVisible();
  await expect(
    confirm.getByRole("button", { name: "Yes, cancel it" }),
    "the confirmation takes the focus",
  ).toBeFocused();
  await shot(page, "job-confirm-cancel", { fullPage: false });
  await page.keyboard.press("Escape");
  await expect(confirm).toHaveCount(0);
  await expect(cancelButton, "Escape gives the focus back to Cancel").toBeFocused();
  expect(await badge(page).getAttribute("data-status"), "Escape does not cancel").toBe("running");
  expect((await api.job(id)).status).toBe("running");
  // By keyboard this time: Enter opens the confirmation, Enter confirms.
  await page.keyboard.press("Enter");
  await expect(confirm).toBeVisible();
  await page.keyboard.press("Enter");
  const outcome = page.getByTestId("action-outcome");
  await expect(outcome).toBeVisible();
  const outcomeText = await outcome.innerText();
  expect(outcomeText).toMatch(/cancel/i);
  expect(outcomeText).not.toMatch(/could not/i);
  // The notice sits under the title row; the title, badge and buttons stay on one line.
  const head = (await page.locator(".page-head").boundingBox())!;
  const notice = (await outcome.boundingBox())!;
  const title = (await page.locator("h1").boundingBox())!;
  const button = (await cancelButton.boundingBox())!;
  expect(notice.y, "the outcome notice is below the title row").toBeGreaterThanOrEqual(head.y + head.height - 1);
  expect(head.height, "the title row does not wrap at 1440 px").toBeLessThan(80);
  expect(
    button.y < title.y + title.height && button.y + button.height > title.y,
    "title and buttons share a line",
  ).toBe(true);
  await shot(page, "job-cancel-requested", { fullPage: false });
  // Until it ends, every part of the page tells the same state: the timeline never shows the
  // end while the badge and the status field do not.
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const snap = await page.evaluate(() => {
      const b = document.querySelector("h1 [data-testid=status-badge]");
      const fields = [...document.querySelectorAll("[data-testid=job-fields] dt")];
      const statusField = fields.find((dt) => dt.textContent === "status")?.nextElementSibling?.textContent;
      const ended = !!document.querySelector('[data-testid=events-timeline] > li[data-kind="cancelled"]');
      return { badge: b?.getAttribute("data-status"), label: b?.textContent, statusField, ended };
    });
    expect(snap.badge, `badge ${snap.badge} but status field ${snap.statusField}`).toBe(snap.statusField);
    expect(
      !snap.ended || snap.badge === "cancelled",
      `the timeline says Cancelled while the badge says ${snap.label}`,
    ).toBe(true);
    if (snap.badge === "cancelled") break;
    await sleep(50);
  }
  await waitForStatus(page, "cancelled", 1_000);
  const kinds = await timelineKinds(page);
  expect(kinds, "the timeline has the request").toContain("cancel_requested");
  expect(kinds.at(-1), "the timeline ends cancelled").toBe("cancelled");
  await expect(cancelButton, "a cancelled job cannot be cancelled again").toBeDisabled();
  await expect(
    page.getByRole("button", { name: "Retry", exact: true }),
    "a cancelled job can be retried",
  ).toBeEnabled();
  // The notices that no longer apply are gone; the Lease card says what is true.
  await expect(page.getByText("Cancel requested:")).toHaveCount(0);
  await expect(page.getByTestId("created-notice")).toHaveCount(0);
  await expect(outcome).toHaveText(/^Cancelled/);
  const lease = await page.locator("section[aria-labelledby=lease-title]").innerText();
  expect(lease).toMatch(/the job was cancelled/);
  expect(lease).not.toMatch(/Released/);
  await shot(page, "job-cancelled");
  await page.setViewportSize(PHONE);
  await shot(page, "job-cancelled-phone", { fullPage: false });
  await page.setViewportSize(DESKTOP);
});

test("delete a finished job from its page, after a confirmation", async ({ page, api }) => {
  const { id } = await api.createJob("noop");
  await api.waitForStatus(id, "succeeded");
  await page.goto(`/jobs/${id}`);
  await waitForStatus(page, "succeeded");
  const del = page.getByRole("button", { name: "Delete", exact: true });
  // Asked first; keeping it changes nothing.
  await del.click();
  const confirm = page.getByTestId("confirm-delete");
  await expect(confirm).toContainText(`Delete job #${id} and its events?`);
  await shot(page, "job-confirm-delete", { fullPage: false });
  await confirm.getByRole("button", { name: /keep/i }).click();
  await expect(confirm).toHaveCount(0);
  expect(await api.exists(id), "kept: the job is still there").toBe(true);
  await del.click();
  await confirm.getByRole("button", { name: "Yes, delete it" }).click();
  // Back on the list, which says what happened; the job is gone from the API.
  await page.waitForURL(/\/jobs$/);
  await expect(page.getByTestId("deleted-notice")).toHaveText(`Job #${id} deleted, with its events.`);
  expect(await api.exists(id), "the job is gone").toBe(false);
  await page.goto(`/jobs/${id}`);
  await expect(page.getByText(`Job #${id} does not exist`)).toBeVisible();
});

test("after Delete the page goes back to where the operator came from, and Back shows no deleted job", async ({
  page,
  api,
}) => {
  const message = `e2e delete-from-failed ${Date.now().toString(36)}`;
  const { id } = await api.createJob("fail", { permanent: true, message });
  await api.waitForStatus(id, "failed");
  const list = `/failed?search=${encodeURIComponent(message)}`;
  await page.goto("/");
  await page.goto(list);
  await page.getByRole("link", { name: `#${id}` }).click();
  await waitForStatus(page, "failed");
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  await page.getByTestId("confirm-delete").getByRole("button", { name: "Yes, delete it" }).click();
  await expect(page.getByTestId("action-outcome")).toHaveText(`Job #${id} deleted, with its events.`);
  expect(new URL(page.url()).pathname + new URL(page.url()).search, "the filtered list it came from").toBe(list);
  await page.goBack();
  await expect(page.getByText(/does not exist/)).toHaveCount(0);
});

test("a queued or running job offers no Delete", async ({ page, api }) => {
  const { id } = await api.createJob("noop", {}, { queue: api.backend.idleQueue });
  await page.goto(`/jobs/${id}`);
  await waitForStatus(page, "queued");
  await expect(page.getByRole("button", { name: "Delete", exact: true })).toHaveCount(0);
  await api.cancel(id);
});

test("a failed attempt's page says when the next runs, after which error, under which policy", async ({
  page,
  api,
}) => {
  const message = `e2e flaky ${test.info().testId}`;
  const job = await api.createJob(
    "fail",
    { permanent: false, message },
    {
      max_attempts: 3,
      retry_policy: { delays_seconds: [600] },
    },
  );
  await page.goto(`/jobs/${job.id}`);
  const next = page.getByTestId("next-attempt");
  await expect(next).toContainText("Attempt 2 of 3 at", { timeout: 20_000 });
  await expect(next).toContainText(message);
  await expect(next).toContainText("policy: the job's own: delays [600]");
});

test("a job created with a 30 s delay says when it runs, not 'when a worker is free'", async ({
  page,
  backend,
  api,
}) => {
  const id = await createJobInForm(page, backend, {
    type: "noop",
    payload: {},
    queue: backend.idleQueue,
    extra: { "Delay (seconds)": 30 },
  });
  const notice = page.getByTestId("created-notice");
  await expect(notice).toContainText(/It waits until .* \(in (29|30) s\), then runs when a worker is free\./);
  await expect(notice).not.toHaveText("Job created. It runs when a worker is free.");
  const job = await api.job(id);
  const wait = Date.parse(String(job.available_at)) - Date.parse(String(job.created_at));
  expect(wait, "the job itself waits 30 s").toBeGreaterThanOrEqual(29_000);
  await shot(page, "job-created-delayed", { fullPage: false });
  await api.cancel(id);
});

test("re-run a succeeded job: its copy's page opens, saying whose copy it is; the original stays", async ({
  page,
  api,
}) => {
  const original = await api.createJob("noop", { hello: "again" });
  await api.waitForStatus(original.id, "succeeded");
  await page.goto(`/jobs/${original.id}`);
  await waitForStatus(page, "succeeded");
  await page.getByRole("button", { name: "Re-run", exact: true }).click();
  await page.waitForURL((url) => /\/jobs\/\d+$/.test(url.pathname) && !url.pathname.endsWith(`/${original.id}`));
  const copy = Number(new URL(page.url()).pathname.split("/").pop());
  expect(copy).toBeGreaterThan(original.id);
  await expect(page.getByText(`This job is a copy of #${original.id}, re-run from it.`)).toBeVisible();
  await expect(page.getByRole("link", { name: `#${original.id}` }).first()).toHaveAttribute(
    "href",
    new RegExp(`/jobs/${original.id}$`),
  );
  await waitForStatus(page, "succeeded");
  await expect(page.getByTestId("job-payload")).toContainText('"hello": "again"');
  const before = await api.job(original.id);
  expect(before.status, "the original is left as it was").toBe("succeeded");
  expect(before.attempts).toBe(1);
  await shot(page, "job-rerun-copy", { fullPage: false });
  // A job that did not succeed offers no Re-run.
  const failed = await api.createJob("fail", { permanent: true, message: "e2e no rerun" });
  await api.waitForStatus(failed.id, "failed");
  await page.goto(`/jobs/${failed.id}`);
  await waitForStatus(page, "failed");
  await expect(page.getByRole("button", { name: "Re-run", exact: true })).toHaveCount(0);
});

test("a delayed job: Edit changes its priority, Run now runs it, the timeline says what changed", async ({
  page,
  api,
}) => {
  const { id } = await api.createJob("noop", {}, { delay_seconds: 3600, priority: -3 });
  await page.goto(`/jobs/${id}`);
  await waitForStatus(page, "queued");
  await page.getByRole("button", { name: "Edit", exact: true }).click();
  const form = page.getByRole("form", { name: `Edit job #${id}` });
  await form.getByLabel("Priority").fill("-9");
  await shot(page, "job-edit");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form, "the form closes once saved").toHaveCount(0);
  await expect(page.getByTestId("job-fields")).toContainText(/priority\s*-9/);
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="edited"]')).toContainText(
    "priority -3 → -9",
  );
  await page.getByRole("button", { name: "Run now", exact: true }).click();
  await waitForStatus(page, "succeeded");
  await expect(page.getByRole("button", { name: "Edit", exact: true }), "a finished job is not editable").toHaveCount(
    0,
  );
});
