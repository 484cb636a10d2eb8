import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LostWorker, User, Worker, WorkerOverride } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { user, worker, workerOverride } from "../test/factories";
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

/**
 * The workers page, the API answering `rows`, `lostRows` and `overrides` (which its PUTs and
 * DELETEs change, as the server's would); the writes it sends are recorded, and a PUT of more
 * than 10,000 threads is refused naming the field. `slowRefetch`: once a write is made, the
 * overrides list takes a minute to answer (the page has only what the writes answered).
 */
function renderWorkers(
  rows: Worker[],
  lostRows: LostWorker[] = [],
  { overrides = [] as WorkerOverride[], who = user() as User, slowRefetch = false } = {},
) {
  const writes: { method: string; path: string; body: unknown }[] = [];
  let current = [...overrides];
  document.cookie = "csrftoken=t; path=/";
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init?: RequestInit) => {
      const path = new URL(url, "http://test").pathname;
      if (path.endsWith("/auth/csrf/")) return new Response('{"csrf_token":"t"}', { status: 200 });
      if (init?.method === "PUT" || init?.method === "DELETE") {
        const body = init.body ? (JSON.parse(String(init.body)) as Record<string, unknown>) : null;
        writes.push({ method: init.method, path, body });
        if (body && Number(body.threads) > 10_000)
          return new Response(
            JSON.stringify({ code: "invalid", detail: "bad", errors: { threads: ["must be between 0 and 10000"] } }),
            { status: 400 },
          );
        const saved = workerOverride(body ?? {});
        current = [
          ...current.filter((o) => o.hostname !== saved.hostname || o.queue !== saved.queue),
          ...(init.method === "PUT" ? [saved] : []),
        ];
        return init.method === "DELETE"
          ? new Response(null, { status: 204 })
          : new Response(JSON.stringify(saved), { status: 200 });
      }
      if (slowRefetch && writes.length && path.endsWith("workers/overrides/"))
        await new Promise((resolve) => setTimeout(resolve, 60_000));
      const answer = path.endsWith("workers/lost/") ? lostRows : path.endsWith("workers/overrides/") ? current : rows;
      return new Response(JSON.stringify(answer), { status: 200 });
    }),
  );
  renderWithClient(<WorkersPage />, { user: who, at: "/workers", path: "/workers" });
  return writes;
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

describe("the queues per host", { timeout: 15_000 }, () => {
  const OVERRIDE_PATH = "/api/v1/workers/hosts/vm-1/queues/reports/";
  const busy: Worker = { ...worker(), queues: ["default", "reports"] };

  it("shows each host's queues with the threads each may use: the command line's, a cap, or stopped", async () => {
    renderWorkers([busy], [], {
      overrides: [workerOverride(), workerOverride({ queue: "media", threads: null, stopped: true })],
    });
    const host = await screen.findByTestId("host-overrides");
    const row = (queue: string) => host.querySelector<HTMLElement>(`tr[data-override-queue="${queue}"]`)!;
    expect(await within(host).findByText("media")).toBeInTheDocument();
    expect(within(row("default")).getByTestId("override-threads")).toHaveTextContent("4 (command line)");
    expect(within(row("reports")).getByTestId("override-threads")).toHaveTextContent("1 of 4");
    expect(within(row("media")).getByTestId("override-threads")).toHaveTextContent("stopped");
    expect(within(row("media")).getByRole("button", { name: "Start here" })).toBeInTheDocument();
    expectCardLabels(host.querySelector("table")!);
  });

  it("sets a queue's threads on one host, stops it there, and clears the override", async () => {
    const writes = renderWorkers([busy], [], { overrides: [workerOverride()] });
    const host = await screen.findByTestId("host-overrides");
    const row = () => host.querySelector<HTMLElement>('tr[data-override-queue="reports"]')!;
    await within(host).findByText("1 of 4");
    const box = within(row()).getByRole("spinbutton");
    await userEvent.clear(box);
    await userEvent.type(box, "2");
    await userEvent.click(within(row()).getByRole("button", { name: "Set threads" }));
    await userEvent.click(within(row()).getByRole("button", { name: "Stop here" }));
    await userEvent.click(within(row()).getByRole("button", { name: "Clear" }));
    expect(writes).toEqual([
      { method: "PUT", path: OVERRIDE_PATH, body: { threads: 2, stopped: false } },
      { method: "PUT", path: OVERRIDE_PATH, body: { threads: 2, stopped: true } },
      { method: "DELETE", path: OVERRIDE_PATH, body: null },
    ]);
  });

  it("keeps the cap just set when the queue is started again before the list is fetched anew", async () => {
    const writes = renderWorkers([busy], [], {
      overrides: [workerOverride({ threads: null, stopped: true })],
      slowRefetch: true,
    });
    const host = await screen.findByTestId("host-overrides");
    const row = () => host.querySelector<HTMLElement>('tr[data-override-queue="reports"]')!;
    await userEvent.type(within(row()).getByRole("spinbutton"), "1");
    await userEvent.click(within(row()).getByRole("button", { name: "Set threads" }));
    await waitFor(() => expect(writes).toHaveLength(1));
    await waitFor(() => expect(within(row()).getByRole("button", { name: "Start here" })).toBeEnabled());
    await userEvent.click(within(row()).getByRole("button", { name: "Start here" }));
    expect(writes).toEqual([
      { method: "PUT", path: OVERRIDE_PATH, body: { threads: 1, stopped: true } },
      { method: "PUT", path: OVERRIDE_PATH, body: { threads: 1, stopped: false } },
    ]);
    expect(within(row()).getByTestId("override-threads")).toHaveTextContent(/^1 of 4/);
  });

  it("starts a queue stopped on a host by removing an override that only stopped it", async () => {
    const writes = renderWorkers([busy], [], { overrides: [workerOverride({ threads: null, stopped: true })] });
    const host = await screen.findByTestId("host-overrides");
    await userEvent.click(await within(host).findByRole("button", { name: "Start here" }));
    expect(writes).toEqual([{ method: "DELETE", path: OVERRIDE_PATH, body: null }]);
  });

  it("overrides a queue its processes do not name (they serve every queue)", async () => {
    const writes = renderWorkers([worker()]);
    const host = await screen.findByTestId("host-overrides");
    await userEvent.type(within(host).getByRole("textbox", { name: "Queue on vm-1" }), "reports");
    await userEvent.click(within(host).getByRole("button", { name: "Stop here" }));
    expect(writes).toEqual([{ method: "PUT", path: OVERRIDE_PATH, body: { threads: null, stopped: true } }]);
  });

  it("says the threads it sets on a queue its processes do not name, once they are typed", async () => {
    const writes = renderWorkers([worker()]);
    const host = await screen.findByTestId("host-overrides");
    await userEvent.type(within(host).getByRole("textbox", { name: "Queue on vm-1" }), "reports");
    await userEvent.type(within(host).getByRole("spinbutton", { name: "Threads for the queue on vm-1" }), "3");
    expect(within(host).queryByRole("button", { name: "Stop here" })).toBeNull();
    await userEvent.click(within(host).getByRole("button", { name: "Set threads to 3" }));
    expect(writes).toEqual([{ method: "PUT", path: OVERRIDE_PATH, body: { threads: 3, stopped: false } }]);
  });

  it("says what the API refused, naming the field's rule", async () => {
    renderWorkers([busy], [], { overrides: [workerOverride()] });
    const host = await screen.findByTestId("host-overrides");
    await within(host).findByText("1 of 4");
    const row = host.querySelector<HTMLElement>('tr[data-override-queue="reports"]')!;
    await userEvent.clear(within(row).getByRole("spinbutton"));
    await userEvent.type(within(row).getByRole("spinbutton"), "20000");
    await userEvent.click(within(row).getByRole("button", { name: "Set threads" }));
    expect(await within(host).findByRole("alert")).toHaveTextContent("must be between 0 and 10000");
  });

  it("shows a user without change_queuesetting the overrides but no control", async () => {
    renderWorkers([busy], [], { overrides: [workerOverride()], who: user({ can: { change_queue: false } }) });
    const host = await screen.findByTestId("host-overrides");
    await within(host).findByText("1 of 4");
    expect(within(host).queryByRole("button")).toBeNull();
  });
});
