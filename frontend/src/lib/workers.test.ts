import { describe, expect, it } from "vitest";
import { placeJobs } from "./workers";

const job = (id: number, worker_id: string, progress_percent: number | null = null) => ({
  id,
  worker_id,
  progress_percent,
});

describe("placeJobs", () => {
  it("names the thread of an executor's worker id", () => {
    const { busy, waiting, labels } = placeJobs([job(1, "vm-4242-3"), job(2, "host-with-dashes-4242-12")], 16);
    expect([busy, waiting]).toEqual([2, 0]);
    expect([...labels.values()]).toEqual(["thread 3", "thread 12"]);
  });

  it("says prefetched jobs within the threads run on a thread", () => {
    const { busy, waiting, labels } = placeJobs([job(1, "vm-1-1"), job(2, "vm-1-prefetch")], 4);
    expect([busy, waiting]).toEqual([2, 0]);
    expect(labels.get(2)).toBe("on a thread");
  });

  it("counts busy threads up to the process's threads and the rest as waiting", () => {
    const jobs = Array.from({ length: 40 }, (_, i) => job(i, i < 16 ? `vm-1-${i}` : "vm-1-prefetch"));
    const { busy, waiting, labels } = placeJobs(jobs, 16);
    expect([busy, waiting]).toEqual([16, 24]);
    // Every thread is named by a job: the prefetched ones all wait.
    expect(labels.get(20)).toBe("waiting for a thread");
  });

  it("does not call running jobs prefetched: one on a thread and five claimed ahead on four threads", () => {
    const jobs = [job(1, "vm-1-2"), job(2, "vm-1-prefetch", 40), ...[3, 4, 5, 6].map((id) => job(id, "vm-1-prefetch"))];
    const { busy, waiting, labels } = placeJobs(jobs, 4);
    expect([busy, waiting]).toEqual([4, 2]);
    // It reported progress: it runs.
    expect(labels.get(2)).toBe("on a thread");
    // Two of the other four run (the renewer has not named their threads yet), two wait.
    expect(labels.get(3)).toBe("on a thread or waiting");
    expect([...labels.values()].filter((l) => l === "prefetched")).toEqual([]);
  });
});
