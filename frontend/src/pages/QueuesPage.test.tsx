import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Queue } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { CAN_VIEW, latencyPoint, queue, user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { QueuesPage } from "./QueuesPage";

/** Each queue's wait over the last hour (by=queue): emails waited, reports finished none. */
const LATENCY = {
  range: "1h",
  bucket_seconds: 60,
  queue: null,
  type: null,
  by: "queue",
  series: [
    {
      queue: "emails",
      points: [
        latencyPoint("2026-12-05T10:00:00Z", 2, { wait_p95_seconds: 4 }),
        latencyPoint("2026-12-05T10:01:00Z"),
        latencyPoint("2026-12-05T10:02:00Z", 1, { wait_p95_seconds: 1.5 }),
      ],
    },
  ],
};

/** The queues endpoint: the list, and pause and resume changing it; the sparklines' percentiles. */
function fakeQueuesApi(initial: Queue[]) {
  let queues = initial;
  const posted: string[] = [];
  document.cookie = "csrftoken=t; path=/";
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init?: RequestInit) => {
      if (init?.method === "POST") {
        posted.push(url);
        const name = decodeURIComponent(url.split("/")[4]);
        queues = queues.map((x) => (x.name === name ? { ...x, paused: url.endsWith("/pause/") } : x));
        return new Response(JSON.stringify(queues.find((x) => x.name === name)), { status: 200 });
      }
      if (url.includes("/metrics/latency/")) return new Response(JSON.stringify(LATENCY), { status: 200 });
      return new Response(JSON.stringify(queues), { status: 200 });
    }),
  );
  return posted;
}

afterEach(() => vi.unstubAllGlobals());

describe("the queues page", () => {
  it("draws each queue's wait p95 over the last hour, with its latest value, and says when none finished", async () => {
    fakeQueuesApi([queue("emails", { queued: 1, runnable: 1 }), queue("reports")]);
    renderWithClient(<QueuesPage />, { user: user(), at: "/queues", path: "/queues" });
    const table = await screen.findByTestId("queues-table");
    expect(within(table).getByRole("columnheader", { name: "Wait p95, last hour" })).toBeInTheDocument();
    const cell = (name: string) =>
      within(table.querySelector<HTMLElement>(`tr[data-queue="${name}"]`)!).getByTestId("queue-sparkline");
    expect(await within(cell("emails")).findByRole("img")).toHaveAccessibleName(
      "Queue emails: wait p95 up to 4.0 s, latest 1.5 s",
    );
    expect(cell("emails")).toHaveTextContent("1.5 s");
    expect(cell("reports")).toHaveTextContent("no jobs finished");
  });

  it("lists every queue with what it holds and runs, its limit (none said as such) and whether it is paused", async () => {
    fakeQueuesApi([
      queue("emails", { queued: 5, runnable: 3, running: 1 }),
      queue("reports", { paused: true, queued: 2, runnable: 2, concurrency_limit: 2 }),
      queue("idle"),
    ]);
    renderWithClient(<QueuesPage />, { user: user(), at: "/queues", path: "/queues" });
    expect(screen.getByRole("heading", { name: "Queues", level: 1 })).toBeInTheDocument();
    const table = await screen.findByTestId("queues-table");
    expect(screen.getByRole("heading", { name: "3 queues" })).toBeInTheDocument();
    const row = (name: string) => table.querySelector<HTMLElement>(`tr[data-queue="${name}"]`)!;
    expect(row("emails")).toHaveTextContent("3 +2 later");
    expect(within(row("emails")).getByRole("link", { name: "emails" })).toHaveAttribute("href", "/queues/emails");
    expect(within(row("reports")).getByText("paused")).toBeInTheDocument();
    expect(row("reports")).toHaveTextContent("2 at once");
    expect(row("emails")).toHaveTextContent("none");
    expectCardLabels(table);
  });

  it("pauses a queue and shows it paused", async () => {
    const posted = fakeQueuesApi([queue("emails", { queued: 1, runnable: 1 })]);
    renderWithClient(<QueuesPage />, { user: user(), at: "/queues", path: "/queues" });
    await userEvent.click(await screen.findByRole("button", { name: "Pause queue emails" }));
    expect(await screen.findByText("paused")).toBeInTheDocument();
    expect(posted).toEqual(["/api/v1/queues/emails/pause/"]);
    expect(screen.getByRole("button", { name: "Resume queue emails" })).toBeInTheDocument();
  });

  it("offers no pause to a user who may only look", async () => {
    fakeQueuesApi([queue("emails")]);
    renderWithClient(<QueuesPage />, { user: user({ can: CAN_VIEW }), at: "/queues", path: "/queues" });
    await screen.findByTestId("queues-table");
    expect(screen.queryByRole("button", { name: /queue emails/ })).toBeNull();
  });
});
