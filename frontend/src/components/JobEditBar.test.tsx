import { describe, expect, it } from "vitest";
import { editBody, toLocalInput } from "./JobEditBar";

const job = { priority: 0, available_at: "2026-12-24T08:00:00Z" };

describe("the edit of a job that has not started", () => {
  it("sends nothing when nothing changed", () => {
    expect(editBody(job, "0", toLocalInput(job.available_at))).toBeNull();
  });

  it("sends only the priority when only it changed", () => {
    expect(editBody(job, "7", toLocalInput(job.available_at))).toEqual({ priority: 7 });
  });

  it("sends a new run time read as local time, in UTC with its offset", () => {
    const local = "2026-12-25T09:30";
    expect(editBody(job, "0", local)).toEqual({ run_at: new Date(local).toISOString() });
  });

  it("refuses a priority that is not a whole number", () => {
    expect(editBody(job, "1.5", toLocalInput(job.available_at))).toBeNull();
    expect(editBody(job, "", toLocalInput(job.available_at))).toBeNull();
  });
});
