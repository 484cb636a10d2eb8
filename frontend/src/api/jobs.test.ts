import { QueryClient } from "@tanstack/react-query";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fetchJobEventsAfter, jobEventsOptions, jobKeys, retryMatchingMutation, runJobAction } from "./jobs";
import { jobEvent } from "../test/factories";
import type { JobEvent } from "./types";

const event = (id: number, kind = "log"): JobEvent =>
  jobEvent(id, kind, { worker_id: "w-1", created_at: "2026-01-01T00:00:00Z" });

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

function routeFetch(route: (url: URL) => Response) {
  const urls: URL[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (u: string) => {
      const url = new URL(u, "http://test");
      urls.push(url);
      return route(url);
    }),
  );
  return urls;
}

afterEach(() => vi.unstubAllGlobals());

describe("job event feed", () => {
  it("follows has_more until the feed is drained", async () => {
    const urls = routeFetch((url) => {
      const after = Number(url.searchParams.get("after"));
      if (after === 5) return json({ results: [event(6), event(7)], has_more: true, next_after: 7 });
      return json({ results: [event(8)], has_more: false, next_after: 8 });
    });
    const events = await fetchJobEventsAfter(1, 5);
    expect(events.map((e) => e.id)).toEqual([6, 7, 8]);
    expect(urls.map((u) => u.searchParams.get("after"))).toEqual(["5", "7"]);
    expect(urls[0].pathname).toBe("/api/v1/jobs/1/events/");
  });

  it("starts after the detail's events and merges each poll without duplicates", async () => {
    let next: JobEvent[] = [event(3, "progress"), event(4, "progress")];
    const urls = routeFetch(() => json({ results: next, has_more: false, next_after: null }));
    const qc = new QueryClient();
    const seed = [event(1, "created"), event(2, "claimed"), event(3, "progress")];
    const options = jobEventsOptions(qc, 1, seed, true);

    const first = await qc.fetchQuery(options);
    expect(urls[0].searchParams.get("after")).toBe("3");
    expect(first.map((e) => e.id)).toEqual([1, 2, 3, 4]);

    // The next poll asks after the newest event it holds; a repeated event is not doubled.
    next = [event(4, "progress"), event(5, "succeeded")];
    const second = await qc.fetchQuery({ ...options, staleTime: 0 });
    expect(urls[1].searchParams.get("after")).toBe("4");
    expect(second.map((e) => e.id)).toEqual([1, 2, 3, 4, 5]);
    expect(qc.getQueryData(jobKeys.events(1))).toEqual(second);
  });
});

describe("retryMatchingMutation", () => {
  it("posts the ids to the bulk retry endpoint with the CSRF header", async () => {
    document.cookie = "csrftoken=t; path=/";
    const calls: { url: string; init: RequestInit }[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string, init: RequestInit) => {
        calls.push({ url, init });
        return json({ retried: 2, not_retried: [3] });
      }),
    );
    const result = await retryMatchingMutation(new QueryClient()).mutationFn({ ids: [1, 2, 3] });
    expect(result).toEqual({ retried: 2, not_retried: [3] });
    expect(calls[0].url).toBe("/api/v1/jobs/retry/");
    expect(calls[0].init.method).toBe("POST");
    expect(calls[0].init.body).toBe('{"ids":[1,2,3]}');
    expect((calls[0].init.headers as Record<string, string>)["X-CSRFToken"]).toBe("t");
  });
});

describe("runJobAction", () => {
  it("sends the same request again from each answer's `after` until it is null, adding up", async () => {
    document.cookie = "csrftoken=t; path=/";
    const bodies: unknown[] = [];
    const refusal = (id: number) => ({ id, reason: "invalid_transition", status: "running", detail: "" });
    const answers = [
      { done: 4, refused_count: 1, refused: [refusal(3)], after: 5, remaining: 7 },
      { done: 5, refused_count: 0, refused: [], after: 10, remaining: 2 },
      { done: 1, refused_count: 1, refused: [refusal(12)], after: null, remaining: 0 },
    ];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (_url: string, init: RequestInit) => {
        bodies.push(JSON.parse(String(init.body)));
        return json(answers[bodies.length - 1]);
      }),
    );
    const result = await runJobAction({ action: "cancel", filter: { status: "queued" } });
    expect(bodies).toEqual([
      { action: "cancel", filter: { status: "queued" } },
      { action: "cancel", filter: { status: "queued" }, after: 5 },
      { action: "cancel", filter: { status: "queued" }, after: 10 },
    ]);
    expect(result).toEqual({
      done: 10,
      refused_count: 2,
      refused: [refusal(3), refusal(12)],
      after: null,
      remaining: 0,
    });
  });

  it("keeps a shard down when any of the answers found it down", async () => {
    document.cookie = "csrftoken=t; path=/";
    const state = (alias: string, up: boolean) => ({ alias, number: 0, up, error: up ? null : "refused" });
    const answers = [
      { done: 4, refused_count: 0, refused: [], after: 5, remaining: 2, shards: [state("a", true), state("b", false)] },
      {
        done: 2,
        refused_count: 0,
        refused: [],
        after: null,
        remaining: 0,
        shards: [state("a", false), state("b", true)],
      },
    ];
    let n = 0;
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => json(answers[n++])),
    );
    const result = await runJobAction({ action: "cancel", all: true });
    expect(result.done).toBe(6);
    expect(result.shards).toEqual([state("a", false), state("b", false)]);
  });
});
