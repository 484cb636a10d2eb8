/**
 * The filter bar shows its text whole (the search box's hint, the selected type and order) at
 * 1440 and 390 px; on a phone it folds behind a Filters button; the queue field offers the
 * queues; a failed job's last error comes before its timeline on a phone.
 */
import type { Page } from "@playwright/test";
import { DESKTOP, PHONE, expect, shot, test, waitForStatus } from "./fixtures";

/** The filter fields whose text (placeholder, or the chosen option) is wider than its box. */
async function cutFields(page: Page) {
  return page.locator("form.filters").evaluate((form) => {
    const ctx = document.createElement("canvas").getContext("2d")!;
    const out: string[] = [];
    for (const el of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>(
      "input:not([type=checkbox]), select",
    )) {
      const style = getComputedStyle(el);
      ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const text =
        el instanceof HTMLSelectElement ? (el.selectedOptions[0]?.text ?? "") : el.value || el.placeholder || "";
      // The box's room for text: its inner width, less a select's arrow.
      const room =
        el.clientWidth -
        parseFloat(style.paddingLeft) -
        parseFloat(style.paddingRight) -
        (el instanceof HTMLSelectElement ? 20 : 0);
      if (ctx.measureText(text).width > room + 1)
        out.push(`${el.id}: "${text}" (${Math.round(ctx.measureText(text).width)} > ${Math.round(room)})`);
    }
    return out;
  });
}

for (const [size, viewport] of [
  ["1440", DESKTOP],
  ["390", PHONE],
] as const) {
  test.describe(size, () => {
    test.use({ viewport });

    test(`the filter bar's text is whole at ${size} px: search hint, the longest status, a long type, the order`, async ({
      page,
    }) => {
      // The Status select's longest choice.
      await page.goto("/jobs?ordering=-finished_at&state=retryable");
      // On a phone the form is open by itself: a filter is applied.
      if (size === "390")
        await expect(page.getByRole("button", { name: /^Filters/ })).toHaveAttribute("aria-expanded", "true");
      await expect(page.getByLabel("Status", { exact: true }).locator("option:checked")).toHaveText(
        "queued · retrying after a back-off",
      );
      const type = page.getByLabel("Type", { exact: true });
      await expect(type.locator("option").nth(1)).toBeAttached();
      // The longest type the API lists.
      const longest = await type
        .locator("option")
        .evaluateAll((options) =>
          options.map((o) => (o as HTMLOptionElement).value).reduce((a, b) => (b.length > a.length ? b : a), ""),
        );
      await type.selectOption(longest);
      await expect(page).toHaveURL(new RegExp(`type=${longest}`));
      await shot(page, `filters-jobs-${size}`, { fullPage: false });
      expect(await cutFields(page)).toEqual([]);

      await page.goto("/failed?ordering=-finished_at");
      if (size === "390") await page.getByRole("button", { name: "Filters" }).click();
      await expect(page.getByLabel("Order")).toHaveValue("-finished_at");
      await shot(page, `filters-failed-${size}`, { fullPage: false });
      expect(await cutFields(page)).toEqual([]);
    });
  });
}

test.describe("phone", () => {
  test.use({ viewport: PHONE });

  test("the filters fold behind a button, the list's first rows on the first screen; the queue field lists the queues", async ({
    page,
    backend,
  }) => {
    await page.goto("/jobs");
    const toggle = page.getByRole("button", { name: "Filters" });
    await expect(toggle).toHaveAttribute("aria-expanded", "false");
    await expect(page.getByLabel("Queue", { exact: true })).toBeHidden();
    await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toBeInViewport();
    await toggle.click();
    await expect(toggle).toHaveAttribute("aria-expanded", "true");
    const queue = page.getByLabel("Queue", { exact: true });
    await expect(queue).toBeVisible();
    const listed = await queue.evaluate((el) =>
      [...((el as HTMLInputElement).list?.options ?? [])].map((o) => o.value),
    );
    expect(listed).toContain(backend.queue);
    // A filter in the address opens them, so what is applied shows.
    await page.goto(`/jobs?queue=${encodeURIComponent(backend.queue)}`);
    await expect(page.getByLabel("Queue", { exact: true })).toBeVisible();
  });

  test("a failed job's last error comes before its timeline", async ({ page, api }) => {
    const { id } = await api.createJob("fail", { permanent: true, message: "card declined at the phone" });
    await api.waitForStatus(id, "failed");
    await page.goto(`/jobs/${id}`);
    await waitForStatus(page, "failed");
    const error = await page.getByRole("heading", { name: "Last error" }).boundingBox();
    const events = await page.getByRole("heading", { name: "Events" }).boundingBox();
    expect(error!.y, "the error is above the timeline").toBeLessThan(events!.y);
  });
});
