import { QueryClient, QueryObserver } from "@tanstack/react-query";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "./client";
import {
  REFRESH_STORAGE_KEY,
  connectPolling,
  getRefreshSettings,
  nextPollInterval,
  polling,
  resetRefreshSettings,
  setRefreshSettings,
} from "./polling";

describe("nextPollInterval", () => {
  it("polls at the base interval while data keeps changing", () => {
    expect(nextPollInterval(1000, { data: { status: "running" }, errorCount: 0 })).toBe(1000);
    expect(nextPollInterval(1000, { data: undefined, errorCount: 0 })).toBe(1000);
  });

  it("backs off exponentially while the server keeps failing, up to a cap", () => {
    const at = (errorCount: number) =>
      nextPollInterval(1000, { data: undefined, errorCount, errorStatus: 503 }, { maxBackoffMs: 20_000 });
    expect([1, 2, 3, 4, 5, 6].map(at)).toEqual([2000, 4000, 8000, 16000, 20000, 20000]);
    // No answer at all (network down) and "too many requests" are worth asking again.
    expect(nextPollInterval(1000, { data: undefined, errorCount: 1, errorStatus: 0 })).toBe(2000);
    expect(nextPollInterval(1000, { data: undefined, errorCount: 1, errorStatus: 429 })).toBe(2000);
  });

  it("stops on an answer that asking again cannot change (a bad filter, a missing job)", () => {
    for (const status of [400, 403, 404]) {
      expect(nextPollInterval(1000, { data: undefined, errorCount: 1, errorStatus: status })).toBe(false);
    }
  });

  it("stops, or slows down, once the data is settled", () => {
    const done = (job: { status: string }) => job.status === "succeeded";
    expect(nextPollInterval(1000, { data: { status: "succeeded" }, errorCount: 0 }, { stopWhen: done })).toBe(false);
    expect(
      nextPollInterval(
        1000,
        { data: { status: "succeeded" }, errorCount: 0 },
        { stopWhen: done, settledIntervalMs: 10_000 },
      ),
    ).toBe(10_000);
    expect(nextPollInterval(1000, { data: { status: "running" }, errorCount: 0 }, { stopWhen: done })).toBe(1000);
  });

  it("uses the rate the person chose instead of the view's own, never settling faster than it", () => {
    expect(nextPollInterval(1000, { data: 1, errorCount: 0 }, {}, 15_000)).toBe(15_000);
    const settled = { stopWhen: () => true, settledIntervalMs: 10_000 as const };
    expect(nextPollInterval(1000, { data: 1, errorCount: 0 }, settled, 60_000)).toBe(60_000);
    expect(nextPollInterval(1000, { data: 1, errorCount: 0 }, settled, 2_000)).toBe(10_000);
  });
});

describe("polling in a running query client", () => {
  let client: QueryClient;
  let disconnect: () => void;
  let unsubscribe: () => void;
  let calls: number;
  let answer: () => unknown;

  function setVisibility(state: "visible" | "hidden") {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
    document.dispatchEvent(new Event("visibilitychange", { bubbles: true }));
  }

  function watch(intervalMs = 1000) {
    // `calls` is a counter the test reads, not an input of the query.
    // eslint-disable-next-line @tanstack/query/exhaustive-deps
    const observer = new QueryObserver(client, {
      queryKey: ["polled"],
      queryFn: async () => {
        calls += 1;
        return answer();
      },
      ...polling<unknown>(intervalMs),
    });
    unsubscribe = observer.subscribe(() => {});
  }

  const after = async (ms: number) => {
    await vi.advanceTimersByTimeAsync(ms);
    return calls;
  };

  beforeEach(() => {
    vi.useFakeTimers();
    localStorage.clear();
    resetRefreshSettings();
    setVisibility("visible");
    calls = 0;
    answer = () => ({ at: Date.now() });
    client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    client.mount(); // as QueryClientProvider does: focus and online events reach the queries
    disconnect = connectPolling(client);
  });

  afterEach(() => {
    unsubscribe?.();
    disconnect();
    client.clear();
    client.unmount();
    setVisibility("visible");
    vi.useRealTimers();
    localStorage.clear();
    resetRefreshSettings();
  });

  it("polls every interval while the tab is visible", async () => {
    watch(1000);
    expect(await after(0)).toBe(1);
    expect(await after(3000)).toBe(4);
  });

  it("sends nothing while the tab is hidden, and refreshes at once when it is shown again", async () => {
    watch(1000);
    expect(await after(2000)).toBe(3);
    setVisibility("hidden");
    expect(await after(30_000)).toBe(3);
    setVisibility("visible");
    expect(await after(0)).toBe(4);
    expect(await after(1000)).toBe(5);
  });

  it("sends nothing while paused, and resumes where it was", async () => {
    watch(1000);
    expect(await after(1000)).toBe(2);
    setRefreshSettings({ paused: true });
    expect(await after(30_000)).toBe(2);
    setRefreshSettings({ paused: false });
    expect(await after(0)).toBe(3);
    expect(await after(2000)).toBe(5);
  });

  it("polls at the chosen rate from the moment it is chosen", async () => {
    watch(1000);
    expect(await after(1000)).toBe(2);
    setRefreshSettings({ everyMs: 5000 });
    expect(await after(0)).toBe(3);
    expect(await after(4900)).toBe(3);
    expect(await after(100)).toBe(4);
    expect(await after(10_000)).toBe(6);
  });

  it("stops polling a request the API refused as invalid, and backs off from a failing server", async () => {
    answer = () => {
      throw new ApiError(400, { code: "invalid", errors: { status: ["Select a valid choice."] } });
    };
    watch(1000);
    expect(await after(0)).toBe(1);
    expect(await after(60_000)).toBe(1);
    unsubscribe();
    client.clear();
    calls = 0;
    answer = () => {
      throw new ApiError(503, null);
    };
    watch(1000);
    expect(await after(0)).toBe(1);
    expect(await after(1999)).toBe(1); // 2 s after the first failure
    expect(await after(1)).toBe(2);
    expect(await after(3999)).toBe(2); // then 4 s
    expect(await after(1)).toBe(3);
    expect(await after(7999)).toBe(3); // then 8 s
    expect(await after(1)).toBe(4);
    answer = () => "back";
    expect(await after(16_000)).toBe(5); // the server answers again: back to every second
    expect(await after(1000)).toBe(6);
  });

  it("remembers the choice in localStorage, and ignores a stored value it does not offer", () => {
    setRefreshSettings({ everyMs: 15_000, paused: true });
    expect(JSON.parse(localStorage.getItem(REFRESH_STORAGE_KEY)!)).toEqual({ everyMs: 15_000, paused: true });
    resetRefreshSettings();
    expect(getRefreshSettings()).toEqual({ everyMs: 15_000, paused: true });
    localStorage.setItem(REFRESH_STORAGE_KEY, JSON.stringify({ everyMs: 7, paused: "yes" }));
    resetRefreshSettings();
    expect(getRefreshSettings()).toEqual({ everyMs: null, paused: false });
  });
});
