import { describe, expect, it } from "vitest";
import { workerOverride } from "../test/factories";
import { addLabel, describeThreads } from "./HostOverrides";

describe("describeThreads", () => {
  it("says what a queue may use on a host: the command line's threads, a cap of them, or stopped", () => {
    expect(describeThreads(undefined, [4])).toBe("4 (command line)");
    expect(describeThreads(undefined, [4, 4])).toBe("4 per process (command line)");
    expect(describeThreads(workerOverride({ threads: 2 }), [4])).toBe("2 of 4");
    expect(describeThreads(workerOverride({ threads: 9 }), [4])).toBe("4 of 4");
    expect(describeThreads(workerOverride({ threads: 1, stopped: true }), [4])).toBe("stopped");
    expect(describeThreads(workerOverride({ threads: 3 }), [])).toBe("3 of 0");
  });
});

describe("addLabel", () => {
  it("names what the form for another queue applies: the threads typed, else a stop", () => {
    expect(addLabel("")).toBe("Stop here");
    expect(addLabel("2")).toBe("Set threads to 2");
    expect(addLabel("0")).toBe("Set threads to 0");
  });
});
