import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RateLimit, User } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { fakeApi, reply } from "../test/fakeApi";
import { user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { formatPeriod } from "../views/RateLimitsView";
import { RateLimitsPage } from "./RateLimitsPage";

const LIMITS: RateLimit[] = [
  {
    kind: "key",
    name: "customer:*",
    max_starts: 2,
    period_seconds: 1,
    source: "declared",
    used: 2,
    keys: [
      { key: "customer:42", used: 2 },
      { key: "customer:7", used: 1 },
    ],
    keys_in_window: 14,
  },
  { kind: "queue", name: "media", max_starts: 100, period_seconds: 60, source: "set", used: 25 },
  { kind: "type", name: "email_send", max_starts: 20, period_seconds: 1, source: "set", used: 0 },
];

/** GET rate-limits/ answers `limits`; POSTs are recorded, and a set over 100,000 starts is refused. */
function renderLimits(who: User, limits: RateLimit[] = LIMITS) {
  const posts: { path: string; body: unknown }[] = [];
  fakeApi(({ path, method, body }) => {
    if (method !== "POST") return limits;
    posts.push({ path, body });
    if (Number((body as { max_starts?: unknown }).max_starts) > 100_000)
      return reply(400, { code: "invalid", detail: "bad", errors: { max_starts: ["at most 100000"] } });
    return path.endsWith("/remove/") ? { removed: true } : limits[2];
  });
  renderWithClient(<RateLimitsPage />, { user: who, at: "/rate-limits", path: "/rate-limits" });
  return posts;
}

afterEach(() => vi.unstubAllGlobals());

describe("the rate limits page", { timeout: 15_000 }, () => {
  it("lists each limit with its window's use, a key limit's busiest keys and where it comes from", async () => {
    renderLimits(user());
    const table = await screen.findByTestId("rate-limits-table");
    const row = (scope: string) => table.querySelector<HTMLElement>(`tr[data-rate-limit="${scope}"]`)!;
    expect(screen.getByRole("heading", { name: "3 limits in force" })).toBeInTheDocument();
    expect(row("key:customer:*")).toHaveTextContent("2 per 1 s");
    expect(within(row("key:customer:*")).getByTestId("rate-used")).toHaveTextContent("2 of 2 full");
    expect(within(row("key:customer:*")).getByTestId("rate-keys")).toHaveTextContent(
      "busiest: customer:42 2, customer:7 1 (14 keys in their windows)",
    );
    expect(row("key:customer:*")).toHaveTextContent("JOB_RATE_LIMITS");
    expect(within(row("queue:media")).getByRole("link", { name: "media" })).toHaveAttribute("href", "/queues/media");
    expect(row("queue:media")).toHaveTextContent("100 per 1 min");
    expect(
      within(row("queue:media")).getByRole("progressbar", { name: /queue media: 25 of 100 used/ }),
    ).toHaveAttribute("aria-valuenow", "25");
    // Only a limit set at run time can be removed here; a declared one lives in the settings.
    expect(within(row("key:customer:*")).queryByRole("button")).toBeNull();
    expect(within(row("type:email_send")).getByRole("button", { name: /Remove/ })).toBeInTheDocument();
    expectCardLabels(table);
  });

  it("sets and removes limits for a user who may change queue settings, and shows a refused field", async () => {
    const posts = renderLimits(user());
    const table = await screen.findByTestId("rate-limits-table");
    await userEvent.click(within(table).getByRole("button", { name: "Remove the rate limit of type email_send" }));
    const form = screen.getByRole("form", { name: "Set a rate limit" });
    await userEvent.selectOptions(within(form).getByLabelText("Limits"), "key");
    await userEvent.type(within(form).getByLabelText("Key (or prefix ending in *)"), "tenant:*");
    await userEvent.type(within(form).getByLabelText("Most starts"), "5");
    await userEvent.clear(within(form).getByLabelText("Per seconds"));
    await userEvent.type(within(form).getByLabelText("Per seconds"), "10");
    await userEvent.click(within(form).getByRole("button", { name: "Set limit" }));
    await vi.waitFor(() => expect(posts).toHaveLength(2));
    expect(posts[0]).toEqual({ path: "/api/v1/rate-limits/remove/", body: { type: "email_send" } });
    expect(posts[1]).toEqual({
      path: "/api/v1/rate-limits/",
      body: { key: "tenant:*", max_starts: 5, period_seconds: 10 },
    });
    await userEvent.clear(within(form).getByLabelText("Most starts"));
    await userEvent.type(within(form).getByLabelText("Most starts"), "999999");
    await userEvent.click(within(form).getByRole("button", { name: "Set limit" }));
    expect(await screen.findByTestId("error-rate-max")).toHaveTextContent("at most 100000");
  });

  it("shows the limits but no form or remove button to a user who may not change them", async () => {
    renderLimits(user({ can: { change_queue: false } }));
    const table = await screen.findByTestId("rate-limits-table");
    expect(within(table).queryByRole("button")).toBeNull();
    expect(screen.queryByRole("form", { name: "Set a rate limit" })).toBeNull();
  });

  it("lists a type's limit once per database with shards, each naming its database", async () => {
    const type = LIMITS[2];
    renderLimits(user(), [
      { ...type, shard: "default", used: 20 },
      { ...type, shard: "shard_b", used: 3 },
    ]);
    const table = await screen.findByTestId("rate-limits-table");
    const rows = table.querySelectorAll<HTMLElement>('tr[data-rate-limit="type:email_send"]');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent("in default");
    expect(within(rows[0]).getByTestId("rate-used")).toHaveTextContent("20 of 20 full");
    expect(rows[1]).toHaveTextContent("in shard_b");
    expect(within(rows[1]).getByTestId("rate-used")).toHaveTextContent("3 of 20");
  });

  it("says how to add one when there are none", async () => {
    renderLimits(user(), []);
    expect(await screen.findByText("No rate limits")).toBeInTheDocument();
  });

  it("writes periods as an operator reads them", () => {
    expect([1, 0.5, 90, 300, 3600, 7200].map(formatPeriod)).toEqual(["1 s", "0.5 s", "90 s", "5 min", "1 h", "2 h"]);
  });
});
