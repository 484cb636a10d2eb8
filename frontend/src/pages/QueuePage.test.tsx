import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { QueueDetail, Throughput, User } from "../api/types";
import { throughputSummary } from "../panels/ThroughputPanel";
import { parseLimit } from "../views/QueueView";
import { QueuePage } from "./QueuePage";
import { expectCardLabels } from "../test/cards";
import { queue, user } from "../test/factories";
import { renderWithClient } from "../test/render";

const userWith = (can: Partial<User["can"]> = {}): User => user({ can });

const detail = (extra: Partial<QueueDetail> = {}): QueueDetail => ({
  ...queue("media", { queued: 4, runnable: 3, running: 1 }),
  counts_by_status: { queued: 4, running: 1, succeeded: 20, failed: 2, cancelled: 1 },
  workers: [
    {
      id: "hostA-1",
      hostname: "hostA",
      pid: 1,
      threads: 4,
      queues: ["media"],
      all_queues: false,
      heartbeat_at: new Date().toISOString(),
      running_here: 1,
    },
  ],
  ...extra,
});

const throughput = (range: string, queue: string | null, type: string | null): Throughput => ({
  range,
  bucket_seconds: range === "24h" ? 1800 : 60,
  queue,
  type,
  points: [
    { at: "2026-01-01T12:00:00Z", succeeded: 3, failed: 1 },
    { at: "2026-01-01T12:01:00Z", succeeded: 2, failed: 0 },
  ],
});

type Call = { method: string; url: URL; body: unknown };

function fakeApi(calls: Call[], state: { queue: QueueDetail | null }) {
  return vi.fn(async (input: string, init?: RequestInit) => {
    const url = new URL(input, "http://test");
    const method = init?.method ?? "GET";
    calls.push({ method, url, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    const path = url.pathname;
    if (path.endsWith("/auth/csrf/")) return new Response('{"csrf_token":"t"}', { status: 200 });
    if (path.endsWith("/job-types/")) return new Response('[{"name":"noop"},{"name":"sleep"}]', { status: 200 });
    if (path.endsWith("/metrics/throughput/")) {
      const q = url.searchParams;
      return new Response(JSON.stringify(throughput(q.get("range") ?? "15m", q.get("queue"), q.get("type"))), {
        status: 200,
      });
    }
    if (path.match(/\/queues\/[^/]+\/(pause|resume)\/$/)) {
      state.queue = { ...state.queue!, paused: path.endsWith("/pause/") };
      return new Response(JSON.stringify(state.queue), { status: 200 });
    }
    if (path.match(/\/queues\/[^/]+\/$/)) {
      if (!state.queue) return new Response('{"code":"queue_not_found","detail":"no such queue"}', { status: 404 });
      if (method === "PATCH") {
        const limit = (JSON.parse(String(init!.body)) as { concurrency_limit: number | null }).concurrency_limit;
        state.queue = { ...state.queue, concurrency_limit: limit };
      }
      return new Response(JSON.stringify(state.queue), { status: 200 });
    }
    return new Response("[]", { status: 200 });
  });
}

function renderQueue(user: User, queue: QueueDetail | null = detail()) {
  const calls: Call[] = [];
  const state = { queue };
  document.cookie = "csrftoken=t; path=/";
  vi.stubGlobal("fetch", fakeApi(calls, state));
  renderWithClient(<QueuePage />, { user, at: "/queues/media", path: "/queues/:name" });
  return { calls, state };
}

afterEach(() => vi.unstubAllGlobals());

// Each test clicks through a few polls and mutations: room for a loaded machine (2 shared cores).
describe("the queue page", { timeout: 15_000 }, () => {
  it("shows the counts by status (each a link to the list), the workers and the throughput", async () => {
    renderQueue(userWith());
    const failed = await screen.findByTestId("queue-count-failed");
    expect(failed).toHaveTextContent("2");
    expect(failed).toHaveAttribute("href", "/jobs?queue=media&status=failed");
    expect(screen.getByTestId("queue-count-succeeded")).toHaveTextContent("20");
    expect(screen.getByTestId("queue-count-queued")).toHaveTextContent("3 runnable");
    const workers = screen.getByTestId("queue-workers");
    expect(workers).toHaveTextContent("hostA:1");
    expect(workers).toHaveTextContent("media");
    expectCardLabels(workers);
    expect(await screen.findByTestId("throughput-chart")).toHaveAttribute(
      "aria-label",
      "5 succeeded and 1 failed in the last 15 min (queue media)",
    );
  });

  it("pauses and resumes the queue", async () => {
    const { calls } = renderQueue(userWith());
    await userEvent.click(await screen.findByRole("button", { name: "Pause queue media" }));
    expect(await screen.findByRole("button", { name: "Resume queue media" })).toBeInTheDocument();
    expect(screen.getByTestId("queue-state")).toHaveTextContent("paused");
    // Its due jobs are not runnable while it is paused.
    expect(screen.getByTestId("queue-runnable")).toHaveTextContent("paused: none claimed");
    expect(screen.getByTestId("queue-runnable")).not.toHaveTextContent("runnable");
    expect(calls.filter((c) => c.method === "POST").map((c) => c.url.pathname)).toEqual([
      "/api/v1/queues/media/pause/",
    ]);
  });

  it("sets and removes the concurrency limit with change_queuesetting", async () => {
    const { calls } = renderQueue(userWith());
    const input = await screen.findByLabelText("Concurrency limit");
    await userEvent.type(input, "3");
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(screen.getByTestId("queue-limit")).toHaveTextContent("now: 3 at once"));
    await userEvent.clear(screen.getByLabelText("Concurrency limit"));
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(screen.getByTestId("queue-limit")).toHaveTextContent("now: none"));
    expect(calls.filter((c) => c.method === "PATCH").map((c) => c.body)).toEqual([
      { concurrency_limit: 3 },
      { concurrency_limit: null },
    ]);
  });

  it("refuses a limit that is not a whole number without asking the API", async () => {
    const { calls } = renderQueue(userWith());
    await userEvent.type(await screen.findByLabelText("Concurrency limit"), "0");
    expect(screen.getByRole("alert")).toHaveTextContent("a whole number, 1 or more");
    expect(screen.getByRole("button", { name: "Save" })).toBeDisabled();
    expect(calls.some((c) => c.method === "PATCH")).toBe(false);
  });

  it("says how the claim orders the queue: plain, or fair shares and aging", async () => {
    renderQueue(userWith(), detail({ fair: true, aging_seconds: 30, fairness_weights: { "tenant:big": 4 } }));
    expect(await screen.findByTestId("queue-claim-order")).toHaveTextContent(
      "turns by fairness key; weights tenant:big=4; aging +1 priority per 30 s waited, up to 100",
    );
  });

  it("shows the limit read-only without change_queuesetting, and no pause without change_job", async () => {
    renderQueue(userWith({ change_queue: false, cancel: false }), detail({ concurrency_limit: 2 }));
    expect(await screen.findByTestId("queue-limit")).toHaveTextContent("2 at once");
    expect(screen.queryByLabelText("Concurrency limit")).toBeNull();
    expect(screen.queryByRole("button", { name: "Pause queue media" })).toBeNull();
  });

  it("says when there is no such queue", async () => {
    renderQueue(userWith(), null);
    expect(await screen.findByText("No queue named media")).toBeInTheDocument();
  });

  it("changes the throughput's range and type", async () => {
    const { calls } = renderQueue(userWith());
    const panel = await screen.findByTestId("throughput");
    await userEvent.click(within(panel).getByRole("button", { name: "24 h" }));
    await waitFor(() =>
      expect(screen.getByTestId("throughput-chart")).toHaveAttribute(
        "aria-label",
        "5 succeeded and 1 failed in the last 24 h (queue media)",
      ),
    );
    expect(within(panel).getByRole("heading")).toHaveTextContent("per 30 minutes");
    await screen.findByRole("option", { name: "sleep" });
    await userEvent.selectOptions(within(panel).getByLabelText("Type"), "sleep");
    await waitFor(() =>
      expect(screen.getByTestId("throughput-chart")).toHaveAttribute(
        "aria-label",
        "5 succeeded and 1 failed in the last 24 h (queue media, type sleep)",
      ),
    );
    const asked = calls.filter((c) => c.url.pathname.endsWith("/metrics/throughput/")).map((c) => c.url.search);
    expect(asked).toContain("?range=24h&queue=media&type=sleep");
    expect(within(panel).queryByLabelText("Queue")).toBeNull(); // fixed by the page
  });
});

describe("parseLimit and throughputSummary", () => {
  it("reads a limit", () => {
    expect(parseLimit(" 4 ")).toBe(4);
    expect(parseLimit("")).toBeNull();
    expect(parseLimit("0")).toBeUndefined();
    expect(parseLimit("2.5")).toBeUndefined();
    expect(parseLimit("-1")).toBeUndefined();
  });

  it("sums a range", () => {
    expect(throughputSummary(throughput("1h", null, null))).toBe("5 succeeded and 1 failed in the last 1 h");
  });
});
