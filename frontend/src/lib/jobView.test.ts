import { describe, expect, it } from "vitest";
import type { JobEvent } from "../api/types";
import { actionNotice, createdNotice, leaseSummary, timelineAsOf } from "./jobView";

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, s)).toISOString();
const ev = (id: number, kind: string, s: number) =>
  ({ id, kind, created_at: at(s), job_id: 1, attempt: 1, message: "", data: {} }) as unknown as JobEvent;

describe("timelineAsOf", () => {
  const created = ev(1, "created", 0);
  const claimed = ev(2, "claimed", 1);
  const asked = ev(3, "cancel_requested", 5);
  const progress = ev(4, "progress", 6);
  const cancelled = ev(5, "cancelled", 7);

  it("holds back a transition the detail does not show yet (the feed is a poll ahead)", () => {
    // The detail read the job at 5 s: running, cancel requested; the feed already has the end.
    const job = { updated_at: at(5), events: [created, claimed, asked] };
    const view = timelineAsOf(job, [created, claimed, asked, progress, cancelled]);
    expect(view.shown.map((e) => e.kind)).toEqual(["created", "claimed", "cancel_requested", "progress"]);
    expect(view.heldBack).toBe(cancelled);
  });

  it("shows everything once the detail has caught up", () => {
    const job = { updated_at: at(7), events: [created, claimed, asked, progress, cancelled] };
    expect(timelineAsOf(job, [created, claimed, asked, progress, cancelled])).toEqual({
      shown: [created, claimed, asked, progress, cancelled],
      heldBack: null,
    });
  });

  it("never holds back what the detail itself carried, nor what was written by its last update", () => {
    // An event the detail carried, though stamped after the row's update: shown (no refetch loop).
    expect(
      timelineAsOf({ updated_at: at(4), events: [created, claimed, asked] }, [created, claimed, asked]).heldBack,
    ).toBeNull();
    // Written in the same transaction as the update the detail shows: part of the snapshot.
    expect(
      timelineAsOf({ updated_at: at(7), events: [created] }, [created, claimed, asked, cancelled]).heldBack,
    ).toBeNull();
  });
});

describe("actionNotice", () => {
  const running = { status: "running", cancel_requested_at: null, attempts: 1, max_attempts: 3 } as const;

  it("says a cancel was requested only while the job still runs with the request on it", () => {
    const cancel = { verb: "cancel" as const };
    expect(actionNotice(cancel, { ...running, cancel_requested_at: at(5) })?.text).toMatch(/^Cancel requested/);
    expect(actionNotice(cancel, { ...running, status: "cancelled", cancel_requested_at: at(5) })?.text).toMatch(
      /^Cancelled/,
    );
    expect(actionNotice(cancel, { ...running, status: "succeeded" })).toEqual({
      tone: "warn",
      text: "The job succeeded before the cancel took effect.",
    });
  });

  it("says a retry queued the job while it waits, and goes once a worker has it", () => {
    const retry = { verb: "retry" as const };
    expect(actionNotice(retry, { ...running, status: "queued" })?.text).toBe(
      "Retried: the job is queued again (attempt 2 of 3 next).",
    );
    expect(actionNotice(retry, running)).toBeNull();
  });

  it("says a retried job enqueued after others waits for them again", () => {
    expect(actionNotice({ verb: "retry" }, { ...running, status: "waiting" })?.text).toMatch(
      /^Retried: the job waits again for the jobs it depends on/,
    );
  });

  it("keeps an error until the next action", () => {
    expect(actionNotice({ verb: "cancel", error: new Error("no") }, running)).toEqual({
      tone: "error",
      text: "Could not cancel: no",
    });
    expect(actionNotice(null, running)).toBeNull();
  });
});

describe("createdNotice", () => {
  it("stays while the new job waits or runs, and goes when it has finished", () => {
    const now = Date.parse(at(0));
    const ready = { available_at: at(0) };
    expect(createdNotice({ created: true }, { status: "queued", ...ready }, now)?.text).toBe(
      "Job created. It runs when a worker is free.",
    );
    expect(createdNotice({ created: true }, { status: "running", ...ready }, now)?.text).toBe("Job created.");
    expect(createdNotice({ created: true }, { status: "cancelled", ...ready }, now)).toBeNull();
    expect(createdNotice({}, { status: "queued", ...ready }, now)).toBeNull();
  });

  it("says when a job created with a delay runs, until then", () => {
    const now = Date.parse(at(0));
    const delayed = { status: "queued" as const, available_at: at(30) };
    expect(createdNotice({ created: true }, delayed, now)?.text).toMatch(
      /^Job created\. It waits until .+ \(in 30 s\), then runs when a worker is free\.$/,
    );
    expect(createdNotice({ created: true }, delayed, now + 30_000)?.text).toBe(
      "Job created. It runs when a worker is free.",
    );
  });
});

describe("leaseSummary", () => {
  const now = Date.parse(at(10));
  it("says what is true of each status, never 'released' (an event kind) for a finished job", () => {
    const of = (status: string, attempts = 1, available = at(0)) =>
      leaseSummary({ status, attempts, available_at: available } as never, now);
    expect(of("queued", 0)).toBe("Not claimed yet: no worker holds it.");
    expect(of("queued", 1, at(20))).toMatch(/retry back-off/);
    expect(of("failed")).toBe("None: the job failed; no worker holds it.");
    expect(of("cancelled")).toBe("None: the job was cancelled; no worker holds it.");
    expect(of("succeeded")).toMatch(/succeeded/);
    for (const status of ["queued", "running", "succeeded", "failed", "cancelled"]) {
      expect(of(status)).not.toMatch(/released/i);
    }
  });
});
