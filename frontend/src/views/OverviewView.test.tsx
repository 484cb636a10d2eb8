import { render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import type { ActivityFeed } from "../api/events";
import { loaded, metrics, workerProcess } from "../test/factories";
import { expectCardLabels } from "../test/cards";
import { OverviewView } from "./OverviewView";

const job = (id: number, worker_id: string, progress_percent: number | null = null) => ({
  id,
  type: "resize",
  worker_id,
  started_at: new Date(Date.now() - 5_000).toISOString(),
  progress_percent,
});

/** The view alone: it renders what it is given, and asks nothing of the API. */
function renderOverview(m: ReturnType<typeof metrics>) {
  const feed: ActivityFeed = { events: [], cursor: undefined };
  render(
    <MemoryRouter>
      <OverviewView
        metrics={loaded(m)}
        activity={loaded(feed)}
        queues={{ list: loaded([]), toggle: null }}
        throughput={<section data-testid="throughput-slot" />}
      />
    </MemoryRouter>,
  );
}

describe("the overview's workers", () => {
  it("shows a lost process as lost, with what it held, and does not count it among active workers", () => {
    const lost = workerProcess({
      id: "vm-3612",
      pid: 3612,
      threads: 3,
      state: "lost",
      heartbeat_at: new Date(Date.now() - 7_000).toISOString(),
      running_jobs: [job(7, "vm-3612-1")],
    });
    const alive = workerProcess({ id: "vm-3700", pid: 3700, threads: 8 });
    renderOverview(metrics({ workers: { active: 1, lost: 1, threads: 8, busy_threads: 0, processes: [lost, alive] } }));
    expect(screen.getByTestId("stat-active-workers")).toHaveTextContent("1");
    expect(screen.getByTestId("stat-active-workers").closest(".stat")).toHaveTextContent("8 threads · 1 lost");
    const table = screen.getByTestId("overview-workers");
    const row = table.querySelector<HTMLElement>('tr[data-worker="vm-3612"]')!;
    expect(row).toHaveAttribute("data-state", "lost");
    // The process is named as on the workers page and in a job's lease.
    expect(row).toHaveTextContent("vm-3612");
    expect(row).not.toHaveTextContent("vm:3612");
    expect(within(row).getByTestId("overview-worker-lost")).toHaveTextContent("lost");
    expect(row).toHaveTextContent("last seen");
    expect(within(row).getByTestId("overview-worker-jobs")).toHaveTextContent("held when it was lost");
    expect(table.querySelector('tr[data-worker="vm-3700"]')).toHaveAttribute("data-state", "alive");
    expectCardLabels(table);
  });

  it("labels jobs claimed ahead by where they are: running ones are not called prefetched", () => {
    const w = workerProcess({
      threads: 4,
      running_jobs: [
        job(1, "vm-4242-2"),
        job(2, "vm-4242-prefetch", 40),
        ...[3, 4, 5, 6].map((id) => job(id, "vm-4242-prefetch")),
      ],
    });
    renderOverview(metrics({ workers: { active: 1, lost: 0, threads: 4, busy_threads: 4, processes: [w] } }));
    const row = screen.getByTestId("overview-workers").querySelector<HTMLElement>("tbody tr")!;
    expect(row).not.toHaveTextContent("prefetched");
    expect(within(row).getByTestId("overview-worker-busy")).toHaveTextContent("4/4+2 waiting for a thread");
    const jobs = within(row).getByTestId("overview-worker-jobs");
    expect(within(jobs).getByRole("link", { name: "#1" }).parentElement).toHaveTextContent("thread 2");
    expect(within(jobs).getByRole("link", { name: "#2" }).parentElement).toHaveTextContent("on a thread");
    expect(within(jobs).getByRole("link", { name: "#3" }).parentElement).toHaveTextContent("on a thread or waiting");
  });
});
