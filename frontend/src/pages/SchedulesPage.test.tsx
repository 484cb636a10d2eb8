import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Schedule, ScheduleTick, User } from "../api/types";
import { CAN_VIEW, user as userFactory } from "../test/factories";
import { renderWithClient } from "../test/render";
import { lastRun, scheduleJobsLink, scheduleTarget } from "../views/SchedulesView";
import { SchedulesPage } from "./SchedulesPage";
import { expectCardLabels } from "../test/cards";

const operator = userFactory();
const viewer = userFactory({ can: CAN_VIEW });

const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();

function renderPage(user: User = operator) {
  renderWithClient(<SchedulesPage />, { user, at: "/schedules", path: "/schedules" });
}

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
  last_job: { id: 42, status: "succeeded", started_at: ago(50), finished_at: ago(40) },
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
    renderPage();
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    expect(within(row).getByTestId("schedule-cron")).toHaveTextContent("0 3 * * *");
    expect(row).toHaveTextContent("Europe/Paris");
    expect(within(row).getByTestId("schedule-last")).toHaveTextContent(/^ran 4\d s ago/);
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

/** The schedules API as the tests set it: the list, run-now, pause, resume and the ticks. */
function fakeSchedulesApi(rows: Schedule[], ticks: ScheduleTick[] = []) {
  const api = { rows, posts: [] as string[], ticksAsked: [] as URL[] };
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: string, init?: RequestInit) => {
      const url = new URL(input, "http://test");
      const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
      if (url.pathname.endsWith("/auth/csrf/")) return json({ csrf_token: "x" });
      const m = url.pathname.match(/\/schedules\/([^/]+)\/(run|pause|resume|ticks)\/$/);
      if (m && init?.method === "POST") {
        const [, name, action] = m;
        api.posts.push(`${action} ${decodeURIComponent(name)}`);
        if (action === "run") return json({ id: 99, status: "queued" }, 201);
        api.rows = api.rows.map((r) => (r.name === name ? { ...r, paused: action === "pause" } : r));
        return json(api.rows.find((r) => r.name === name));
      }
      if (m && m[2] === "ticks") {
        api.ticksAsked.push(url);
        return json(ticks);
      }
      if (url.pathname.endsWith("/schedules/")) return json(api.rows);
      return json({}, 404);
    }),
  );
  return api;
}

describe("the schedules' controls", () => {
  it("shows when the last job ran, not when it was ticked", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    const at = (s: number) => new Date(now - s * 1000).toISOString();
    expect(lastRun({ started_at: at(130), finished_at: at(120) }, now)?.text).toBe("ran 2 min 00 s ago");
    expect(lastRun({ started_at: at(20), finished_at: null }, now)?.text).toBe("running since 20 s ago");
    expect(lastRun({ started_at: null, finished_at: null }, now)?.text).toBe("not run yet");
    expect(lastRun(null, now)).toBeNull();
  });

  it("runs a schedule now and links the job it enqueued", async () => {
    const api = fakeSchedulesApi([base]);
    renderPage();
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    await userEvent.click(within(row).getByRole("button", { name: "Run now" }));
    const outcome = await within(row).findByTestId("schedule-run-outcome");
    expect(within(outcome).getByRole("link", { name: "#99" })).toHaveAttribute("href", "/jobs/99");
    expect(api.posts).toEqual(["run nightly-report"]);
  });

  it("pauses a schedule, shows it paused, and resumes it", async () => {
    const api = fakeSchedulesApi([base]);
    renderPage();
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    expect(within(row).queryByTestId("schedule-paused")).toBeNull();
    await userEvent.click(within(row).getByRole("button", { name: "Pause" }));
    expect(await within(row).findByTestId("schedule-paused")).toHaveTextContent("paused");
    expect(within(row).getByTestId("schedule-next")).toHaveTextContent("paused");
    await userEvent.click(within(row).getByRole("button", { name: "Resume" }));
    await waitFor(() => expect(within(row).queryByTestId("schedule-paused")).toBeNull());
    expect(api.posts).toEqual(["pause nightly-report", "resume nightly-report"]);
  });

  it("offers no writes to a user without change_job, but shows the tick history", async () => {
    fakeSchedulesApi([{ ...base, paused: true }]);
    renderPage(viewer);
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    expect(within(row).getByTestId("schedule-paused")).toBeInTheDocument();
    expect(within(row).queryByRole("button", { name: "Run now" })).toBeNull();
    expect(within(row).queryByRole("button", { name: "Resume" })).toBeNull();
    expect(within(row).getByRole("button", { name: "Tick history" })).toBeInTheDocument();
  });

  it("expands each schedule's tick history: the tick, its job link and its outcome", async () => {
    const ticks: ScheduleTick[] = [
      {
        tick_at: null,
        manual: true,
        job: {
          id: 61,
          status: "running",
          attempts: 1,
          max_attempts: 3,
          created_at: ago(30),
          started_at: ago(20),
          finished_at: null,
          last_error: null,
        },
      },
      {
        tick_at: ago(3600),
        manual: false,
        job: {
          id: 60,
          status: "failed",
          attempts: 3,
          max_attempts: 3,
          created_at: ago(3600),
          started_at: ago(3500),
          finished_at: ago(3400),
          last_error: "ValueError: no pages",
        },
      },
    ];
    const api = fakeSchedulesApi([base], ticks);
    renderPage();
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    const toggle = within(row).getByRole("button", { name: "Tick history" });
    expect(toggle).toHaveAttribute("aria-expanded", "false");
    await userEvent.click(toggle);
    const history = await screen.findByTestId("ticks-nightly-report");
    expect(toggle).toHaveAttribute("aria-expanded", "true");
    expect(api.ticksAsked[0].pathname).toMatch(/\/schedules\/nightly-report\/ticks\/$/);
    expect(api.ticksAsked[0].searchParams.get("limit")).toBe("50");
    const manual = within(history).getByRole("link", { name: "#61" }).closest("tr")!;
    expect(manual).toHaveTextContent(/^run now, 3\d s ago/);
    expect(manual).toHaveTextContent("running");
    expect(manual).toHaveTextContent(/running since 2\d s ago/);
    const failed = within(history).getByRole("link", { name: "#60" }).closest("tr")!;
    expect(within(failed).getByRole("link", { name: "#60" })).toHaveAttribute("href", "/jobs/60");
    expect(failed).toHaveTextContent("1 h 0 min ago");
    expect(failed).toHaveTextContent("failed");
    expect(failed).toHaveTextContent("attempt 3/3");
    expect(failed).toHaveTextContent("ValueError: no pages");
    expect(failed).toHaveTextContent("ran 56 min");
    expectCardLabels(history);
    expectCardLabels(screen.getByTestId("schedules-table"));

    await userEvent.click(within(row).getByRole("button", { name: "Hide tick history" }));
    expect(screen.queryByTestId("ticks-nightly-report")).toBeNull();
  });

  it("shows a succeeded tick's earlier error muted, as an earlier attempt's, not in red", async () => {
    const ticks: ScheduleTick[] = [
      {
        tick_at: ago(600),
        manual: false,
        job: {
          id: 70,
          status: "succeeded",
          attempts: 2,
          max_attempts: 3,
          created_at: ago(600),
          started_at: ago(590),
          finished_at: ago(580),
          last_error: "TimeoutError: upstream",
        },
      },
    ];
    fakeSchedulesApi([base], ticks);
    renderPage();
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    await userEvent.click(within(row).getByRole("button", { name: "Tick history" }));
    const history = await screen.findByTestId("ticks-nightly-report");
    const tick = within(history).getByRole("link", { name: "#70" }).closest("tr")!;
    expect(within(tick).getByTestId("tick-earlier-error")).toHaveTextContent("earlier attempt: TimeoutError: upstream");
    expect(tick.querySelector(".tick-error")).toBeNull();
  });

  it("gives the next run in the schedule's own time zone, named", async () => {
    // 03:00 in Paris on a winter night: 02:00 UTC.
    fakeSchedulesApi([{ ...base, next_run_at: "2026-12-05T02:00:00Z" }]);
    renderPage();
    const row = (await screen.findByText("nightly-report")).closest("tr")!;
    const at = within(row).getByTestId("schedule-next-at");
    expect(at.textContent).toMatch(/03:00:00 (CET|GMT\+1)$/);
  });
});
