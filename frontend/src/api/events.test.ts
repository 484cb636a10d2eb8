import { QueryClient } from "@tanstack/react-query";
import { afterEach, describe, expect, it, vi } from "vitest";
import { activityFeedOptions, eventKeys, isActivity } from "./events";
import type { JobEvent } from "./types";

const ev = (id: number, kind: string): JobEvent =>
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
  }) as JobEvent;

afterEach(() => vi.unstubAllGlobals());

describe("the activity feed", () => {
  it("keeps transitions and outcomes, leaves progress out, and its cursor passes every event read", async () => {
    const pages = [
      {
        results: [ev(1, "claimed"), ev(2, "progress"), ev(3, "progress"), ev(4, "log")],
        has_more: false,
        next_after: 4,
      },
      { results: [ev(5, "progress"), ev(6, "lease_renewed")], has_more: false, next_after: 6 },
      { results: [ev(7, "succeeded")], has_more: false, next_after: 7 },
    ];
    const asked: (string | null)[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (input: string) => {
        asked.push(new URL(input, "http://test").searchParams.get("after"));
        return new Response(JSON.stringify(pages.shift()), { status: 200 });
      }),
    );
    const client = new QueryClient();
    const options = activityFeedOptions(client);
    for (let i = 0; i < 3; i++) {
      const data = await (options.queryFn as (c: { signal: AbortSignal }) => Promise<unknown>)({
        signal: new AbortController().signal,
      });
      client.setQueryData(eventKeys.feed, data);
    }
    const feed = client.getQueryData<{ events: JobEvent[]; after: number }>(eventKeys.feed)!;
    expect(feed.events.map((e) => e.kind)).toEqual(["claimed", "succeeded"]);
    expect(asked).toEqual([null, "4", "6"]); // not held back at 1 by the unshown events
    expect(isActivity({ kind: "retry_scheduled" })).toBe(true);
    expect(isActivity({ kind: "progress" })).toBe(false);
  });
});
