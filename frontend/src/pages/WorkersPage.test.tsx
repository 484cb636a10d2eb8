import { screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LostWorker, Worker } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { worker } from "../test/factories";
import { renderWithClient } from "../test/render";
import { formatMemory, groupWorkers } from "../views/WorkersView";
import { WorkersPage } from "./WorkersPage";

const alive = worker();
const lost = worker({
  id: "vm-1-4243",
  pid: 4243,
  state: "lost",
  heartbeat_at: new Date(Date.now() - 30_000).toISOString(),
  heartbeat_age_seconds: 30,
  stuck_handlers: 1,
  running_jobs: [
    { id: 43, type: "resize", queue: "images", worker_id: "vm-1-4243-1", started_at: null, progress_percent: 10 },
  ],
});

/** The workers page, the API answering `rows`. */
function renderWorkers(rows: Worker[], lostRows: LostWorker[] = []) {
  vi.stubGlobal(
    "fetch",
    vi.fn(
      async (url: string) =>
        new Response(JSON.stringify(url.includes("workers/lost/") ? lostRows : rows), { status: 200 }),
    ),
  );
  renderWithClient(<WorkersPage />);
}

afterEach(() => vi.unstubAllGlobals());

describe("the workers page", () => {
  it("shows each process with its state, what it runs, memory, jobs done and last beat; a lost one with what it held", async () => {
    renderWorkers([alive, lost]);
    const first = (await screen.findByText("vm-1-4242")).closest("tr")!;
    expect(within(first).getByTestId("worker-state")).toHaveTextContent("alive");
    expect(within(first).getByRole("link", { name: "#42" })).toHaveAttribute("href", "/jobs/42");
    expect(first).toHaveTextContent("70 MiB");
    expect(first).toHaveTextContent("1200");
    expect(within(first).getByTestId("worker-last-beat")).toHaveTextContent("ago");
    const second = screen.getByText("vm-1-4243").closest("tr")!;
    expect(second).toHaveAttribute("data-state", "lost");
    expect(within(second).getByTestId("worker-state")).toHaveTextContent("lost");
    expect(within(second).getByTestId("worker-stuck")).toHaveTextContent("1 stuck handler");
    expect(within(second).getByTestId("worker-jobs")).toHaveTextContent("held when it was lost");
    expect(within(second).getByTestId("worker-last-beat")).toHaveTextContent(/\b3\d s ago/);
    for (const table of screen.getAllByTestId("workers-table")) expectCardLabels(table);
  });

  it("says where jobs claimed ahead are: on a thread, or waiting for one", async () => {
    const prefetching: Worker = {
      ...alive,
      threads: 2,
      running_jobs: [1, 2, 3].map((id) => ({ ...alive.running_jobs[0], id, worker_id: "vm-1-4242-prefetch" })),
    };
    renderWorkers([prefetching]);
    const row = (await screen.findByText("vm-1-4242")).closest("tr")!;
    expect(row).toHaveTextContent("2/2 busy+1 waiting for a thread");
    expect(within(row).getByTestId("worker-jobs")).toHaveTextContent("on a thread or waiting");
    expect(within(row).getByTestId("worker-jobs")).not.toHaveTextContent("prefetch");
  });

  it("says how to start a worker when none runs", async () => {
    renderWorkers([]);
    expect(await screen.findByText("No worker is running")).toBeInTheDocument();
  });
});

describe("formatMemory and groupWorkers", () => {
  it("formats resident memory", () => {
    expect(formatMemory(null)).toBe("—");
    expect(formatMemory(70 * 2 ** 20)).toBe("70 MiB");
    expect(formatMemory(3 * 2 ** 30)).toBe("3.0 GiB");
  });

  it("groups processes by host and supervisor", () => {
    const plain = { ...alive, id: "vm-2-1", hostname: "vm-2", supervisor_pid: null };
    expect(groupWorkers([plain, alive, lost]).map(([k, v]) => [k, v.length])).toEqual([
      ["vm-1 · supervisor 4240", 2],
      ["vm-2", 1],
    ]);
  });

  it("lists the processes lost in the last day, with when last seen and what became of their jobs", async () => {
    const gone = (id: string, requeued: number, failed: number): LostWorker => ({
      worker_id: id,
      hostname: "vm-1",
      pid: 4250,
      supervisor_pid: null,
      threads: 4,
      started_at: "2026-01-01T00:00:00Z",
      last_heartbeat_at: new Date(Date.now() - 120_000).toISOString(),
      forgotten_at: new Date(Date.now() - 60_000).toISOString(),
      jobs_done: 12,
      jobs_requeued: requeued,
      jobs_failed: failed,
    });
    renderWorkers([alive], [gone("vm-1-4250", 3, 1), gone("vm-1-4251", 0, 0)]);
    const table = await screen.findByTestId("lost-workers-table");
    expect(screen.getByRole("heading", { name: "Recently lost" })).toBeInTheDocument();
    const row = (id: string) => table.querySelector<HTMLElement>(`tr[data-lost-worker="${id}"]`)!;
    expect(within(row("vm-1-4250")).getByTestId("lost-worker-jobs")).toHaveTextContent(
      "3 requeued, 1 failed (no attempt left)",
    );
    expect(row("vm-1-4250")).toHaveTextContent("2 min 00 s ago");
    expect(within(row("vm-1-4251")).getByTestId("lost-worker-jobs")).toHaveTextContent("held none");
    expectCardLabels(table);
  });

  it("shows no lost section when none was lost in the last day", async () => {
    renderWorkers([alive]);
    await screen.findByText("vm-1-4242");
    expect(screen.queryByTestId("lost-workers-table")).toBeNull();
  });
});
