import { describe, expect, it } from "vitest";
import { toCreateBody } from "./CreateJobPage";
import { summarizeRetries } from "./FailedJobsPage";
import { safeNext } from "./LoginPage";
import { toListParams } from "../lib/useFilterParams";
import { ApiError } from "../api/client";
import type { Job } from "../api/types";

describe("toCreateBody", () => {
  const blank = { type: "sleep", payload: '{"seconds": 3}', priority: "", max_attempts: "", queue: "", delay_seconds: "", timeout_seconds: "", idempotency_key: "" };

  it("leaves blank fields out so the type's defaults apply", () => {
    expect(toCreateBody(blank)).toEqual({ type: "sleep", payload: { seconds: 3 } });
  });

  it("sends numbers as numbers and trims text", () => {
    expect(toCreateBody({ ...blank, priority: "-5", max_attempts: "7", delay_seconds: "1.5", timeout_seconds: "30", queue: " emails ", idempotency_key: " k1 " })).toEqual({
      type: "sleep", payload: { seconds: 3 }, priority: -5, max_attempts: 7, delay_seconds: 1.5, timeout_seconds: 30, queue: "emails", idempotency_key: "k1",
    });
  });
});

describe("summarizeRetries", () => {
  const job = { id: 1, status: "queued" } as Job;
  it("reports success", () => {
    expect(summarizeRetries([{ id: 1, ok: true, job }, { id: 2, ok: true, job }])).toEqual({ tone: "success", text: "Retried 2 jobs: queued again." });
  });
  it("names the refused jobs and why", () => {
    const refused = { id: 9, ok: false as const, error: new ApiError(409, { detail: "job 9 is queued" }) };
    expect(summarizeRetries([{ id: 1, ok: true, job }, refused])).toEqual({ tone: "warn", text: "Retried 1 job; 1 refused: #9 (job 9 is queued)." });
    expect(summarizeRetries([refused]).tone).toBe("error");
  });
});

describe("safeNext", () => {
  it("only follows same-site paths after login", () => {
    expect(safeNext("/jobs/4?x=1")).toBe("/jobs/4?x=1");
    expect(safeNext("//evil.example/")).toBe("/");
    expect(safeNext("https://evil.example/")).toBe("/");
    expect(safeNext(null)).toBe("/");
  });
});

describe("toListParams", () => {
  it("turns the filter form into the API's typed parameters", () => {
    expect(toListParams({ status: "failed", type: "sleep", priority: "-3", search: " ", ordering: "-id" }, 2, 25)).toEqual({
      status: ["failed"], type: "sleep", queue: undefined, priority: -3, search: undefined, ordering: "-id", page: 2, page_size: 25,
    });
  });

  it("drops a priority that is not a number and page 1", () => {
    expect(toListParams({ priority: "high" }, 1, 50)).toMatchObject({ priority: undefined, page: undefined, page_size: 50 });
  });
});
