import { describe, expect, it } from "vitest";
import { nextPollInterval } from "./polling";

describe("nextPollInterval", () => {
  it("polls at the base interval while data keeps changing", () => {
    expect(nextPollInterval(1000, { data: { status: "running" }, errorCount: 0 })).toBe(1000);
    expect(nextPollInterval(1000, { data: undefined, errorCount: 0 })).toBe(1000);
  });

  it("backs off exponentially while the server keeps failing, up to a cap", () => {
    const at = (errorCount: number) =>
      nextPollInterval(1000, { data: undefined, errorCount }, { maxBackoffMs: 20_000 });
    expect([1, 2, 3, 4, 5, 6].map(at)).toEqual([2000, 4000, 8000, 16000, 20000, 20000]);
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
});
