import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Schedule } from "../api/types";
import { SchedulesPage, scheduleJobsLink, scheduleTarget } from "./SchedulesPage";

const base: Schedule = {
  name: "nightly-report",
  cron: "0 3 * * *",
  timezone: "Europe/Paris",
  type: "report_generate",
  task: null,
  payload: { pages: 20 },
  args: [],
  kwargs: {},
  queue: "reports",
  priority: null,
  max_attempts: null,
  timeout_seconds: null,
  source: "settings",
  valid: true,
  problems: [],
  paused: false,
  next_run_at: new Date(Date.now() + 3_600_000).toISOString(),
  last_tick_at: new Date(Date.now() - 60_000).toISOString(),
  last_job: { id: 42, status: "succeeded", started_at: null, finished_at: null },
};

afterEach(() => vi.unstubAllGlobals());

describe("the periodic jobs page", () => {
  it("lists each schedule with its cron, last run (and its job), next run and a link to its type's jobs", async () => {
    const task: Schedule = {
      ...base,
      name: "cleanup",
      type: null,
      task: "myapp.tasks.cleanup",
      payload: {},
      kwargs: { days: 7 },
      queue: null,
      source: "decorator",
      last_tick_at: null,
      last_job: null,
      valid: false,
      problems: ["cannot import task 'myapp.tasks.cleanup'"],
      next_run_at: null,
    };
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => new Response(JSON.stringify([base, task]), { status: 200 })),
    );
    render(
      <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
        <MemoryRouter>
          <SchedulesPage />
        </MemoryRouter>
      </QueryClientProvider>,
    );
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    expect(within(row).getByTestId("schedule-cron")).toHaveTextContent("0 3 * * *");
    expect(row).toHaveTextContent("Europe/Paris");
    expect(within(row).getByTestId("schedule-last")).toHaveTextContent(/1 min 00 s ago|60 s ago|1 min/);
    expect(within(row).getByRole("link", { name: "#42" })).toHaveAttribute("href", "/jobs/42");
    expect(within(row).getByTestId("schedule-next")).toHaveTextContent(/^in /);
    expect(within(row).getByRole("link", { name: "Recent report_generate jobs" })).toHaveAttribute(
      "href",
      "/jobs?type=report_generate&queue=reports&schedule=nightly-report",
    );
    const bad = screen.getByText("cleanup").closest("tr")!;
    expect(bad).toHaveTextContent("invalid");
    expect(within(bad).getByTestId("schedule-problems")).toHaveTextContent("cannot import task");
    expect(within(bad).getByTestId("schedule-last")).toHaveTextContent("never");
    expect(within(bad).getByTestId("schedule-next")).toHaveTextContent("skipped while invalid");
    expect(within(bad).getByRole("link", { name: "Recent jobs" })).toHaveAttribute("href", "/jobs?schedule=cleanup");
  });

  it("describes what a tick enqueues", () => {
    expect(scheduleTarget(base)).toBe('report_generate {"pages":20}');
    expect(scheduleTarget({ ...base, type: null, task: "a.b", args: [1], kwargs: { x: "y" } })).toBe('a.b(1, x="y")');
    expect(scheduleJobsLink({ name: "tick", type: "noop", queue: null })).toBe("/jobs?type=noop&schedule=tick");
    expect(scheduleJobsLink({ name: "every day", type: null, queue: null })).toBe("/jobs?schedule=every+day");
  });
});
