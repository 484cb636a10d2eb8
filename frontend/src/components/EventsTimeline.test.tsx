import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { jobEvent } from "../test/factories";
import { EventsTimeline, eventDetail, kindLabel } from "./EventsTimeline";

const ev = jobEvent;
/** The timeline's rows, oldest first; `kinds` their data-kind. */
const rows = () => within(screen.getByTestId("events-timeline")).getAllByRole("listitem");
const kinds = (items: HTMLElement[]) => items.map((li) => li.dataset.kind);

describe("EventsTimeline", () => {
  it("lists events oldest first, folding progress and renewals into one row each", () => {
    render(
      <EventsTimeline
        events={[
          ev(1, "created", { attempt: 0, worker_id: null }),
          ev(2, "claimed"),
          ev(3, "progress", { data: { percent: 25 }, message: "slept 0.75s" }),
          ev(4, "progress", { data: { percent: 50 }, message: "slept 1.50s" }),
          ev(5, "lease_renewed"),
          ev(6, "lease_renewed"),
          ev(7, "succeeded"),
        ]}
      />,
    );
    const items = rows();
    expect(kinds(items)).toEqual(["created", "claimed", "progress", "lease_renewed", "succeeded"]);
    expect(items[2]).toHaveTextContent("50% · slept 1.50s");
    expect(items[2]).toHaveTextContent("×2");
    expect(items[3]).toHaveTextContent("Lease renewed×2");
    expect(items[1]).toHaveTextContent("attempt 1 · host-1-0");
  });

  it("shows each attempt's start from the event that ended it, before that attempt's events", () => {
    render(
      <EventsTimeline
        events={[
          ev(1, "created", { attempt: 0, worker_id: null, created_at: "2026-01-01T12:00:00.000Z" }),
          ev(3, "progress", { data: { percent: 50 }, created_at: "2026-01-01T12:00:01.500Z" }),
          ev(4, "retry_scheduled", {
            data: { started_at: "2026-01-01T12:00:01.000Z", lease_token: "t1", delay_seconds: 2 },
            created_at: "2026-01-01T12:00:02.000Z",
          }),
          ev(5, "succeeded", {
            attempt: 2,
            worker_id: "host-2-3",
            data: { started_at: "2026-01-01T12:00:04.000Z", lease_token: "t2" },
            created_at: "2026-01-01T12:00:05.000Z",
          }),
        ]}
      />,
    );
    const items = rows();
    expect(kinds(items)).toEqual(["created", "started", "progress", "retry_scheduled", "started", "succeeded"]);
    expect(items[1]).toHaveTextContent("Started");
    expect(items[1]).toHaveTextContent("attempt 1 · host-1-0");
    expect(items[4]).toHaveTextContent("attempt 2 · host-2-3");
  });

  it("shows the running attempt's start from the job row, and old claimed events as they are", () => {
    const running = {
      status: "running",
      attempts: 2,
      started_at: "2026-01-01T12:00:04.000Z",
      locked_by: "host-2-3",
      lease_token: "t2",
    };
    const { rerender } = render(
      <EventsTimeline
        events={[
          ev(1, "created", { attempt: 0, worker_id: null, created_at: "2026-01-01T12:00:00.000Z" }),
          ev(2, "claimed", { data: { lease_token: "t1" }, created_at: "2026-01-01T12:00:01.000Z" }),
          ev(3, "retry_scheduled", { data: { lease_token: "t1" }, created_at: "2026-01-01T12:00:02.000Z" }),
          ev(4, "log", { attempt: 2, worker_id: "host-2-3", message: "hi", created_at: "2026-01-01T12:00:04.500Z" }),
        ]}
        job={running}
      />,
    );
    let items = rows();
    expect(kinds(items)).toEqual(["created", "claimed", "retry_scheduled", "started", "log"]);
    expect(items[3]).toHaveTextContent("attempt 2 · host-2-3");
    // A job running under a claim written before history v2: its `claimed` row is its start.
    rerender(
      <EventsTimeline
        events={[ev(1, "created", { attempt: 0, worker_id: null }), ev(2, "claimed", { data: { lease_token: "t2" } })]}
        job={running}
      />,
    );
    items = rows();
    expect(kinds(items)).toEqual(["created", "claimed"]);
    // Claimed before, given back (uncharged: attempt 1 again), claimed again since: its start
    // is the job row's, not the old row's.
    rerender(
      <EventsTimeline
        events={[
          ev(1, "created", { attempt: 0, worker_id: null }),
          ev(2, "claimed", { data: { lease_token: "t0" } }),
          ev(3, "released", { data: { lease_token: "t0" } }),
        ]}
        job={{ ...running, attempts: 1, lease_token: "t9" }}
      />,
    );
    items = rows();
    expect(kinds(items)).toEqual(["created", "claimed", "released", "started"]);
  });

  it("marks rows that arrived since the last render", () => {
    const { rerender } = render(<EventsTimeline events={[ev(1, "created"), ev(2, "claimed")]} />);
    rerender(<EventsTimeline events={[ev(1, "created"), ev(2, "claimed"), ev(3, "failed")]} />);
    const items = screen.getAllByRole("listitem");
    expect(items[2]).toHaveClass("fresh");
    expect(items[0]).not.toHaveClass("fresh");
  });

  it("shows a job that expired unstarted, and why", () => {
    render(
      <EventsTimeline
        events={[
          ev(1, "created", { attempt: 0, worker_id: null }),
          ev(2, "expired", {
            attempt: 0,
            worker_id: null,
            message: "expired: not started by its expires_at, 2030-01-02T03:04:05Z",
          }),
        ]}
      />,
    );
    const items = rows();
    expect(items[1].dataset.kind).toBe("expired");
    expect(items[1]).toHaveTextContent("Expired");
    expect(items[1]).toHaveTextContent("not started by its expires_at");
  });

  it("says so when there are no events", () => {
    render(<EventsTimeline events={[]} />);
    expect(screen.getByText("No events yet.")).toBeInTheDocument();
  });
});

describe("eventDetail", () => {
  it("summarises a scheduled retry", () => {
    expect(
      eventDetail({ kind: "retry_scheduled", message: "RuntimeError: boom", data: { delay_seconds: 1.234 } }),
    ).toBe("RuntimeError: boom · retry in 1.2 s");
  });

  it("shows each failed attempt's own traceback, folded", async () => {
    render(
      <EventsTimeline
        events={[
          ev(1, "claimed"),
          ev(2, "retry_scheduled", {
            message: "KeyError: 'a'",
            data: { delay_seconds: 2, traceback: "Traceback (most recent call last):\n  step_a\nKeyError: 'a'" },
          }),
          ev(3, "claimed", { attempt: 2 }),
          ev(4, "failed", {
            attempt: 2,
            message: "KeyError: 'b'",
            data: { traceback: "Traceback (most recent call last):\n  step_b\nKeyError: 'b'" },
          }),
          ev(5, "failed", { attempt: 3, data: { traceback: null } }),
        ]}
      />,
    );
    const first = screen.getByTestId("traceback-2");
    const second = screen.getByTestId("traceback-4");
    expect(first).not.toHaveAttribute("open");
    expect(within(first).getByText("Traceback of attempt 1")).toBeInTheDocument();
    expect(first).toHaveTextContent("step_a");
    expect(within(second).getByText("Traceback of attempt 2")).toBeInTheDocument();
    expect(second).toHaveTextContent("step_b");
    expect(screen.queryByTestId("traceback-5")).toBeNull();
  });
});

describe("kindLabel", () => {
  it("capitalises every kind, the ones it names and the others alike", () => {
    expect(kindLabel("created")).toBe("Created");
    expect(kindLabel("retry_scheduled")).toBe("Retry scheduled");
    expect(kindLabel("blocked")).toBe("Blocked");
    expect(kindLabel("unblocked")).toBe("Unblocked");
    expect(kindLabel("stuck_handler")).toBe("Stuck handler");
  });
});

describe("an operator's edit in the timeline", () => {
  it("says what changed, old and new", () => {
    const detail = eventDetail({ kind: "edited", message: "edited by ops", data: { priority: [1, 7] } });
    expect(detail).toBe("edited by ops · priority 1 → 7");
  });
});
