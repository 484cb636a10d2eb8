/**
 * The sidebar with many queues, in a 1440x900 window: the links scroll within it, and the
 * refresh and theme controls and the account (Admin for staff, Log out) stay on screen,
 * however long the page; on a phone they are all in the Menu.
 */
import type { Page } from "@playwright/test";
import { DESKTOP, PHONE, expect, shot, test } from "./fixtures";

const QUEUES = 11;

/** Whether an element is wholly inside the window. */
async function inWindow(page: Page, selector: string) {
  return page.locator(selector).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
  });
}

for (const colorScheme of ["light", "dark"] as const) {
  test.describe(colorScheme, () => {
    test.use({ colorScheme, viewport: DESKTOP });

    test(`with ${QUEUES} queues the sidebar fits a 900 px tall window and its links scroll`, async ({
      page,
      api,
      backend,
    }) => {
      const queues = Array.from(
        { length: QUEUES },
        (_, i) => `${backend.idleQueue}-side-${String(i + 1).padStart(2, "0")}`,
      );
      const jobs = await Promise.all(queues.map((queue) => api.createJob("noop", {}, { queue })));
      try {
        await page.goto("/jobs");
        const nav = page.locator("#main-menu");
        const last = nav.getByRole("link", { name: new RegExp(`^${queues.at(-1)}`) });
        await expect(last).toBeAttached();
        await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toBeVisible();
        await shot(page, `sidebar-queues-${colorScheme}-1440`, { fullPage: false });
        const box = await page.locator("aside.sidebar").evaluate((el) => ({
          height: el.getBoundingClientRect().height,
          overflow: el.scrollHeight - el.clientHeight,
        }));
        expect(box.height, "the sidebar is no taller than the window").toBeLessThanOrEqual(DESKTOP.height);
        expect(box.overflow, "nothing spills out of the sidebar").toBeLessThanOrEqual(1);
        expect(await nav.evaluate((el) => el.scrollHeight > el.clientHeight), "the links scroll").toBe(true);
        for (const what of [".sidebar-controls", ".sidebar-foot"])
          expect(await inWindow(page, what), `${what} is on screen`).toBe(true);
        const logOut = page.getByRole("button", { name: "Log out" });
        await expect(logOut).toBeInViewport({ ratio: 1 });
        // At the bottom of a long page, still there.
        await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
        await expect(logOut).toBeInViewport({ ratio: 1 });
        // The last queue is reached by scrolling the links, and opens its page.
        await last.scrollIntoViewIfNeeded();
        await expect(last).toBeInViewport({ ratio: 0.95 });
        await last.click();
        await page.waitForURL(new RegExp(`/queues/${queues.at(-1)}$`));
        await expect(last).toHaveAttribute("aria-current", "page");

        // On a phone: everything is in the Menu, the page scrolling to reach it.
        await page.setViewportSize(PHONE);
        await page.getByRole("button", { name: "Menu" }).click();
        await logOut.scrollIntoViewIfNeeded();
        await expect(logOut).toBeInViewport({ ratio: 1 });
        await last.scrollIntoViewIfNeeded();
        await expect(last).toBeInViewport({ ratio: 0.95 });
      } finally {
        for (const j of jobs) await api.cancel(j.id);
      }
    });
  });
}
