/** The login page and the session: what an anonymous visitor meets, and logging out. */
import { expect, shot, test } from "./fixtures";

test.describe("anonymous", () => {
  test.use({ loggedIn: false });

  test("Django serves the dashboard, with its runtime config, for client routes", async ({ request }) => {
    const index = await request.get("/jobs/1");
    expect(index.ok()).toBe(true);
    const html = await index.text();
    expect(html).toContain('id="root"');
    expect(html).toContain('id="jobqueue-config"');
  });

  test("log in by keyboard after a wrong password, back where one wanted to go", async ({ page, backend }) => {
    await page.goto("/jobs");
    await page.waitForURL(/\/login\?next=%2Fjobs$/);
    await page.getByLabel("Password").fill("wrong-password");
    await page.getByLabel("Username").fill(backend.username);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("alert").filter({ hasText: /invalid username or password/i })).toBeVisible();
    await shot(page, "login-error");
    await page.getByLabel("Username").focus();
    await page.keyboard.press("Tab");
    await expect(page.getByLabel("Password"), "Tab from Username reaches Password").toBeFocused();
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.type(backend.password);
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/jobs$/);
    await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  });
});

test("log out: the session ends and the pages ask for a login again", async ({ page, backend, browser }) => {
  // A session of this test's own: logging out must not end the one the other specs share.
  const context = await browser.newContext({ baseURL: backend.baseURL, storageState: { cookies: [], origins: [] } });
  const own = await context.newPage();
  await own.goto("/login");
  await own.getByLabel("Username").fill(backend.username);
  await own.getByLabel("Password").fill(backend.password);
  await own.getByRole("button", { name: "Sign in" }).click();
  await expect(own.getByRole("heading", { name: "Overview" })).toBeVisible();
  await own.getByRole("button", { name: "Log out" }).click();
  await own.waitForURL(/\/login/);
  await own.goto("/jobs/1");
  await own.waitForURL(/\/login\?next=%2Fjobs%2F1$/);
  await context.close();
  // The shared session is untouched.
  await page.goto("/jobs");
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
});
