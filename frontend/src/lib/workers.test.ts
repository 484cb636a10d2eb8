import { describe, expect, it } from "vitest";
import { threadUse, workerLabel } from "./workers";

describe("workerLabel", () => {
  it("names the thread of an executor's worker id", () => {
    expect(workerLabel("vm-4242-3")).toBe("thread 3");
    expect(workerLabel("host-with-dashes-4242-12")).toBe("thread 12");
  });

  it("says a job held under the process's prefetch id is prefetched", () => {
    expect(workerLabel("vm-4242-prefetch")).toBe("prefetched");
  });
});

describe("threadUse", () => {
  it("counts busy threads up to the process's threads", () => {
    expect(threadUse(3, 4)).toEqual({ busy: 3, beyond: 0 });
    expect(threadUse(4, 4)).toEqual({ busy: 4, beyond: 0 });
  });

  it("reports prefetched jobs beyond the threads separately", () => {
    expect(threadUse(40, 16)).toEqual({ busy: 16, beyond: 24 });
  });
});
