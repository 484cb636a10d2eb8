import { QueryClient } from "@tanstack/react-query";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type ActivityFeed, activityFeedOptions, eventKeys, isActivity } from "./events";
import type { FeedEvent } from "./types";

const ev = (id: number, kind: string, shard = "default"): FeedEvent =>
  ({
    id,
    job_id: 1,
    job_type: "noop",
    job_status: "running",
    kind,
    attempt: 1,
    worker_id: null,
    message: "",
    data: {},
    created_at: "2026-01-01T00:00:00Z",
    shard,
  }) as FeedEvent;

afterEach(() => vi.unstubAllGlobals());

/** Runs the feed's query once per page, as its polls would, and returns the cursors it sent. */
async function pollPages(pages: unknown[]) {
  const asked: (string | null)[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: string) => {
      asked.push(new URL(input, "http://test").searchParams.get("cursor"));
      return new Response(JSON.stringify(pages.shift()), { status: 200 });
    }),
  );
  const client = new QueryClient();
  const options = activityFeedOptions(client);
  for (let i = 0, n = pages.length; i < n; i++) {
    const data = await (options.queryFn as (c: { signal: AbortSignal }) => Promise<unknown>)({
      signal: new AbortController().signal,
    });
    client.setQueryData(eventKeys.feed, data);
  }
  return { asked, feed: client.getQueryData<ActivityFeed>(eventKeys.feed)! };
}

describe("the activity feed", () => {
  it("keeps transitions and outcomes, leaves progress out, and its cursor passes every event read", async () => {
    const { asked, feed } = await pollPages([
      {
        results: [ev(1, "claimed"), ev(2, "progress"), ev(3, "progress"), ev(4, "log")],
        has_more: false,
        next_after: 4,
        next_cursor: "c4",
      },
      { results: [ev(5, "progress"), ev(6, "lease_renewed")], has_more: false, next_after: 6, next_cursor: "c6" },
      { results: [ev(7, "succeeded")], has_more: false, next_after: 7, next_cursor: "c7" },
    ]);
    expect(feed.events.map((e) => e.kind)).toEqual(["claimed", "succeeded"]);
    expect(asked).toEqual([null, "c4", "c6"]); // not held back at 1 by the unshown events
    expect(isActivity({ kind: "retry_scheduled" })).toBe(true);
    expect(isActivity({ kind: "progress" })).toBe(false);
  });

  it("keeps events of two shards that share an id, in the order the feed gives them", async () => {
    const { feed } = await pollPages([
      { results: [ev(9, "created", "shard_b"), ev(9, "created")], has_more: false, next_after: 9, next_cursor: "a" },
      // An overlapping poll brings one of them again: it stays once.
      { results: [ev(9, "created"), ev(3, "cancelled", "shard_c")], has_more: false, next_after: 9, next_cursor: "b" },
    ]);
    expect(feed.events.map((e) => `${e.shard}:${e.id}`)).toEqual(["shard_b:9", "default:9", "shard_c:3"]);
    expect(feed.cursor).toBe("b");
  });
});
