/**
 * The rate limits page as an operator meets it: a limit set from its form shows with its use,
 * its use rises as jobs of its type start (read from the starts log, as the claim counts them),
 * the change is in the audit log, and removing it takes it off the page.
 */
import { expect, shot, test } from "./fixtures";

test("an operator sets a rate limit, sees its window fill as jobs start, and removes it", async ({ page, api }) => {
  await page.goto("/");
  await page.getByRole("link", { name: "Rate limits" }).click();
  await expect(page.getByRole("heading", { name: "Rate limits", level: 1 })).toBeVisible();
  const form = page.getByRole("form", { name: "Set a rate limit" });
  await form.getByLabel("Limits").selectOption("type");
  await form.getByLabel("Job type").fill("noop");
  await form.getByLabel("Most starts").fill("50");
  await form.getByLabel("Per seconds").fill("3600");
  await form.getByRole("button", { name: "Set limit" }).click();
  const row = page.locator('[data-testid=rate-limits-table] tr[data-rate-limit="type:noop"]');
  try {
    await expect(row).toContainText("50 per 1 h");
    await expect(row).toContainText("set at run time");
    // Noop jobs run, one at a time, until their starts count against the window: the workers
    // read the limits at most a second late, so the first may start before they know of it.
    const used = row.getByTestId("rate-used");
    for (let i = 0; i < 20 && (await used.textContent())?.startsWith("0 "); i++) {
      await api.waitForStatus((await api.createJob("noop", {})).id, "succeeded");
      await page.waitForTimeout(500); // the page polls every 2 s; a job every half second is plenty
    }
    await expect(used).toHaveText(/^([1-9]|[1-4]\d) of 50$/, { timeout: 15_000 });
    await shot(page, "rate-limits-light-1440", { fullPage: false });

    await page.getByRole("link", { name: "Audit log" }).click();
    await expect(
      page.locator("[data-testid=audit-table] tbody tr").filter({ hasText: "rate limit type:noop" }).first(),
    ).toContainText("starts: none → 50");
    await page.getByRole("link", { name: "Rate limits" }).click();
  } finally {
    await page.getByRole("button", { name: "Remove the rate limit of type noop" }).click();
  }
  await expect(row).toHaveCount(0);
});
