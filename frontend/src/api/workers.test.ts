import { describe, expect, it } from "vitest";
import type { Worker } from "./types";
import { nextWorkersPoll } from "./workers";

const worker = (state: "alive" | "lost", lost_in_seconds: number) => ({ state, lost_in_seconds }) as Worker;

describe("the workers page's next poll", () => {
  it("keeps the usual rate while every live process has more than that left", () => {
    expect(nextWorkersPoll(2000, [worker("alive", 3.5), worker("alive", 2.5)])).toBe(2000);
  });

  it("asks just after a live process would turn lost, so a dead one shows at once", () => {
    expect(nextWorkersPoll(2000, [worker("alive", 3.5), worker("alive", 1.2)])).toBe(1300);
    expect(nextWorkersPoll(2000, [worker("alive", 0)]), "never faster than 4 a second").toBe(250);
  });

  it("ignores the lost ones, and never polls when polling is off or paused", () => {
    expect(nextWorkersPoll(2000, [worker("lost", 0)])).toBe(2000);
    expect(nextWorkersPoll(2000, [])).toBe(2000);
    expect(nextWorkersPoll(2000, undefined)).toBe(2000);
    expect(nextWorkersPoll(false, [worker("alive", 0.5)])).toBe(false);
  });
});
