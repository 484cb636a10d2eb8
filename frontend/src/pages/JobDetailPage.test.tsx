import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { JobDetail, JobEvent } from "../api/types";
import { fakeApi, reply } from "../test/fakeApi";
import { jobEvent, user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { JobDetailPage } from "./JobDetailPage";

const t0 = Date.now();
const at = (s: number) => new Date(t0 + s * 1000).toISOString();

function event(id: number, kind: string, s: number): JobEvent {
  return jobEvent(id, kind, { job_id: 7, created_at: at(s) });
}

function detail(fields: Partial<JobDetail>): JobDetail {
  return {
    id: 7,
    type: "sleep",
    queue: "default",
    status: "running",
    priority: 0,
    payload: { seconds: 30 },
    result: null,
    attempts: 1,
    max_attempts: 3,
    available_at: at(-10),
    created_at: at(-10),
    updated_at: at(-9),
    started_at: at(-9),
    finished_at: null,
    locked_by: "host-1-0",
    lease_expires_at: at(60),
    lease_token: "t",
    timeout_seconds: null,
    progress: { percent: null, message: "" },
    progress_percent: null,
    progress_message: "",
    last_error: null,
    idempotency_key: null,
    cancel_requested_at: null,
    is_finished: false,
    last_traceback: null,
    request_fingerprint: null,
    dependencies: [],
    dependants: [],
    // The claim writes no event: the running attempt's start is the job's started_at.
    events: [event(1, "created", -10)],
    ...fields,
  } as JobDetail;
}

/** The job, queued and never claimed: no worker, lease or start, with `fields`. */
function notStarted(fields: Partial<JobDetail>): JobDetail {
  return detail({
    status: "queued",
    attempts: 0,
    started_at: null,
    locked_by: null,
    lease_expires_at: null,
    lease_token: null,
    ...fields,
  });
}

/** The API of one job: its detail, its event feed and the cancel action, as the test sets them. */
function fakeJobApi() {
  const api = {
    detail: detail({}),
    feed: [event(1, "created", -10)],
    detailReads: 0,
    cancels: 0,
    deletes: 0,
    reruns: 0,
    runNows: 0,
    edits: [] as unknown[],
    signals: [] as unknown[],
  };
  const job = () => {
    const { events: _events, ...fields } = api.detail;
    return fields;
  };
  fakeApi(({ path, params, method, body }) => {
    if (path.endsWith("/jobs/7/cancel/") && method === "POST") {
      api.cancels += 1;
      api.detail = detail({ ...api.detail, cancel_requested_at: at(1), updated_at: at(1) });
      api.feed = [...api.feed, event(3, "cancel_requested", 1)];
      api.detail.events = [...api.feed];
      return job();
    }
    if (path.endsWith("/jobs/7/run_now/") && method === "POST") {
      api.runNows += 1;
      api.detail = detail({ ...api.detail, available_at: at(0), updated_at: at(0) });
      return job();
    }
    if (path.endsWith("/jobs/7/") && method === "PATCH") {
      const edit = body as { priority?: number };
      api.edits.push(edit);
      if (edit.priority !== undefined && edit.priority > 0)
        return reply(400, { code: "invalid", detail: "priority: must be at most 0 (JOB_API_MAX_PRIORITY), not 5" });
      api.detail = detail({ ...api.detail, ...edit });
      return job();
    }
    if (path.endsWith("/jobs/7/signal/") && method === "POST") {
      const signal = body as { name: string };
      api.signals.push(signal);
      api.detail = detail({ ...api.detail, awaiting_signal: null, available_at: at(0) });
      return { job_id: 7, name: signal.name, woke: true };
    }
    if (path.endsWith("/jobs/7/rerun/") && method === "POST") {
      api.reruns += 1;
      if (api.detail.status !== "succeeded")
        return reply(409, { code: "invalid_transition", detail: "Only a succeeded job can be re-run." });
      const { events: _events, ...copy } = detail({ id: 8, status: "queued", attempts: 0, events: [] });
      return reply(201, copy);
    }
    if (path.endsWith("/jobs/8/events/")) return { results: [], has_more: false, next_after: null };
    if (path.endsWith("/jobs/8/")) return detail({ id: 8, status: "queued", attempts: 0, locked_by: null, events: [] });
    if (path.endsWith("/jobs/7/") && method === "DELETE") {
      api.deletes += 1;
      return new Response(null, { status: 204 });
    }
    if (path.endsWith("/jobs/7/events/")) {
      const after = Number(params.get("after") ?? 0);
      return { results: api.feed.filter((e) => e.id > after), has_more: false, next_after: null };
    }
    if (path.endsWith("/jobs/7/")) {
      api.detailReads += 1;
      return api.detail;
    }
    return undefined;
  });
  return api;
}

function renderJob() {
  renderWithClient(<JobDetailPage />, {
    user: user(),
    at: { pathname: "/jobs/7", state: { created: true } },
    path: "/jobs/:id",
    routes: { "/jobs": <ListStandIn /> },
  });
}

/** Where the page goes after a delete, and what it is told. */
function ListStandIn() {
  const state = useLocation().state as { deleted?: number } | null;
  return <p data-testid="list">the list; deleted {state?.deleted}</p>;
}

const kinds = () =>
  within(screen.getByTestId("events-timeline"))
    .queryAllByRole("listitem")
    .map((li) => li.getAttribute("data-kind"));

afterEach(() => vi.unstubAllGlobals());

describe("cancelling a running job", () => {
  it("asks first, by keyboard: Escape keeps it running, Enter on the confirmation cancels", async () => {
    const api = fakeJobApi();
    renderJob();
    const user = userEvent.setup();
    const cancel = await screen.findByRole("button", { name: "Cancel" });
    cancel.focus();
    await user.keyboard("{Enter}");
    const confirm = await screen.findByTestId("confirm-cancel");
    expect(confirm).toHaveTextContent("Cancel job #7 while it runs?");
    expect(within(confirm).getByRole("button", { name: "Yes, cancel it" })).toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("confirm-cancel")).toBeNull();
    await waitFor(() => expect(cancel).toHaveFocus());
    expect(api.cancels).toBe(0);

    await user.keyboard("{Enter}");
    await screen.findByTestId("confirm-cancel");
    await user.keyboard("{Enter}");
    await waitFor(() => expect(api.cancels).toBe(1));
    expect(await screen.findByTestId("action-outcome")).toHaveTextContent(/^Cancel requested/);
    expect(screen.getByTestId("status-badge")).toHaveTextContent("cancelling");
  });

  it("shows one state everywhere while the cancel completes, and drops the notices that no longer apply", async () => {
    const api = fakeJobApi();
    renderJob();
    const user = userEvent.setup();
    expect(await screen.findByTestId("created-notice")).toHaveTextContent("Job created.");
    // The claim wrote no event: the running attempt's start is read from the job itself.
    await waitFor(() => expect(kinds()).toEqual(["created", "started"]));
    await user.click(await screen.findByRole("button", { name: "Cancel" }));
    await user.click(await screen.findByRole("button", { name: "Yes, cancel it" }));
    await screen.findByText(/^Cancel requested:/);

    // The worker ends it: the feed has the event, the next detail read still says running.
    const readsBefore = api.detailReads;
    // The outcome carries its attempt's start (its lease token, when it started).
    api.feed = [...api.feed, { ...event(4, "cancelled", 3), data: { lease_token: "t", started_at: at(-9) } }];
    await act(() => new Promise((r) => setTimeout(r, 1300)));
    // The feed saw it, so the page read the detail again at once; the timeline waits for it.
    expect(api.detailReads).toBeGreaterThan(readsBefore);
    expect(kinds()).not.toContain("cancelled");
    expect(screen.getByTestId("status-badge")).toHaveTextContent("cancelling");

    api.detail = detail({
      ...api.detail,
      status: "cancelled",
      is_finished: true,
      finished_at: at(3),
      updated_at: at(3),
      locked_by: null,
      lease_expires_at: null,
      lease_token: null,
      events: [...api.feed],
    });
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveTextContent("cancelled"), { timeout: 3000 });
    // One start for the attempt, now read from its outcome, before the attempt's own events.
    expect(kinds()).toEqual(["created", "started", "cancel_requested", "cancelled"]);
    expect(screen.getByTestId("job-fields")).toHaveTextContent(/status\s*cancelled/);
    expect(screen.queryByText(/^Cancel requested:/)).toBeNull();
    expect(screen.queryByTestId("created-notice")).toBeNull();
    expect(screen.getByTestId("action-outcome")).toHaveTextContent(/^Cancelled/);
    expect(screen.getByText("None: the job was cancelled; no worker holds it.")).toBeInTheDocument();
  });

  it("cancels a queued job without asking", async () => {
    const api = fakeJobApi();
    api.detail = detail({
      status: "queued",
      locked_by: null,
      started_at: null,
      attempts: 0,
      events: [event(1, "created", -10)],
    });
    renderJob();
    await userEvent.click(await screen.findByRole("button", { name: "Cancel" }));
    await waitFor(() => expect(api.cancels).toBe(1));
    expect(screen.queryByTestId("confirm-cancel")).toBeNull();
  });
});

/** The job, succeeded a second ago: it may be deleted or re-run. */
const succeeded = () =>
  detail({
    status: "succeeded",
    locked_by: null,
    lease_expires_at: null,
    finished_at: at(-1),
    is_finished: true,
    events: [
      event(1, "created", -10),
      { ...event(3, "succeeded", -1), data: { lease_token: "t", started_at: at(-9) } },
    ],
  });

/** fakeJobApi with job 7 succeeded. */
function succeededJobApi() {
  const api = fakeJobApi();
  api.detail = succeeded();
  api.feed = api.detail.events;
  return api;
}

/** While job 7 runs (its Cancel shown), the button `name` is not offered. */
async function expectNotOfferedWhileRunning(name: string) {
  fakeJobApi();
  renderJob();
  await screen.findByRole("button", { name: "Cancel" });
  expect(screen.queryByRole("button", { name })).toBeNull();
}

describe("deleting a finished job", () => {
  it("is offered only once the job has finished", async () => {
    await expectNotOfferedWhileRunning("Delete");
  });

  it("asks first; Keep it deletes nothing, Yes deletes and goes to the list saying so", async () => {
    const api = succeededJobApi();
    renderJob();
    await userEvent.click(await screen.findByRole("button", { name: "Delete" }));
    const confirm = screen.getByTestId("confirm-delete");
    expect(confirm).toHaveTextContent("Delete job #7 and its events? This cannot be undone.");
    await userEvent.click(within(confirm).getByRole("button", { name: "Keep it" }));
    expect(screen.queryByTestId("confirm-delete")).toBeNull();
    expect(api.deletes).toBe(0);

    await userEvent.click(screen.getByRole("button", { name: "Delete" }));
    await userEvent.click(screen.getByRole("button", { name: "Yes, delete it" }));
    expect(await screen.findByTestId("list")).toHaveTextContent("deleted 7");
    expect(api.deletes).toBe(1);
  });
});

describe("re-running a succeeded job", () => {
  it("is offered only for a succeeded job", async () => {
    await expectNotOfferedWhileRunning("Re-run");
  });

  it("enqueues a copy and goes to its page, which says it is a copy of the original", async () => {
    const api = succeededJobApi();
    renderJob();
    await userEvent.click(await screen.findByRole("button", { name: "Re-run" }));
    const notice = await screen.findByTestId("rerun-notice");
    expect(notice).toHaveTextContent("This job is a copy of #7");
    expect(within(notice).getByRole("link", { name: "#7" })).toHaveAttribute("href", "/jobs/7");
    expect(await screen.findByRole("heading", { level: 1 })).toHaveTextContent("#8 sleep");
    expect(api.reruns).toBe(1);
  });
});

describe("a queued job waiting for its concurrency key", () => {
  it("says so in the banner and the Progress card alike, not that it waits for a worker", async () => {
    const api = fakeJobApi();
    api.detail = notStarted({
      concurrency_key: "customer:42",
      concurrency_key_limit: 1,
      concurrency_key_running: 1,
      concurrency_key_wait: "waiting: 1 of 1 running for key customer:42",
      concurrency_key_holders: [6],
      events: [event(1, "created", -10)],
    });
    api.feed = api.detail.events;
    renderJob();
    const banner = await screen.findByTestId("concurrency-key");
    expect(within(banner).getByRole("link", { name: "#6" })).toHaveAttribute("href", "/jobs/6");
    const message = screen.getByTestId("progress-message");
    expect(message).toHaveTextContent("Waiting for its concurrency key (held by #6), not for a worker.");
    expect(message).not.toHaveTextContent(/^Waiting for a worker/);
  });
});

describe("a queued job of a fair queue", () => {
  it("says in the Progress card how its turn is taken, and shows its key among all fields", async () => {
    const api = fakeJobApi();
    const wait = "fair shares: key tenant:a takes turns with 2 other keys; 3 of its jobs come first";
    api.detail = notStarted({
      fairness_key: "tenant:a",
      fairness_wait: wait,
      events: [event(1, "created", -10)],
    });
    api.feed = api.detail.events;
    renderJob();
    const message = await screen.findByTestId("progress-message");
    expect(message).toHaveTextContent(`Waiting for a worker, in turn: ${wait}.`);
    const fields = screen.getByTestId("job-fields");
    expect(fields).toHaveTextContent("fairness_keytenant:a");
  });
});

describe("a queued job held back by a rate limit", () => {
  it("says in the Progress card which limit is full and when it fits, not that it waits for a worker", async () => {
    const api = fakeJobApi();
    const wait = "rate limit of type sleep: 20 of 20 started in the last 1 s; room for it in 0.4 s";
    api.detail = notStarted({
      rate_limit_wait: wait,
      events: [event(1, "created", -10)],
    });
    api.feed = api.detail.events;
    renderJob();
    const message = await screen.findByTestId("progress-message");
    expect(message).toHaveTextContent(`Waiting for its rate limit, not for a worker: ${wait}.`);
    expect(screen.getByTestId("job-fields")).toHaveTextContent(`rate_limit_wait${wait}`);
  });
});

/** The job, queued and delayed an hour: it may run now or be edited. */
const delayed = () =>
  detail({
    status: "queued",
    locked_by: null,
    started_at: null,
    attempts: 0,
    lease_expires_at: null,
    priority: -2,
    available_at: at(3600),
    events: [event(1, "created", -10)],
  });

describe("a job that has not started", () => {
  it("offers Run now only while it is delayed, and Edit only before it starts", async () => {
    fakeJobApi();
    renderJob();
    await screen.findByRole("button", { name: "Cancel" });
    expect(screen.queryByRole("button", { name: "Run now" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Edit" })).toBeNull();
  });

  it("runs a delayed job now", async () => {
    const api = fakeJobApi();
    api.detail = delayed();
    api.feed = api.detail.events;
    renderJob();
    await userEvent.click(await screen.findByRole("button", { name: "Run now" }));
    await waitFor(() => expect(api.runNows).toBe(1));
    await waitFor(() => expect(screen.queryByRole("button", { name: "Run now" })).toBeNull());
  });

  it("sends only what changed, and shows the API's refusal under the form", async () => {
    const api = fakeJobApi();
    api.detail = delayed();
    api.feed = api.detail.events;
    renderJob();
    await userEvent.click(await screen.findByRole("button", { name: "Edit" }));
    const form = screen.getByRole("form", { name: "Edit job #7" });
    const priority = within(form).getByLabelText("Priority");
    expect(within(form).getByRole("button", { name: "Save" })).toBeDisabled();
    await userEvent.clear(priority);
    await userEvent.type(priority, "5");
    await userEvent.click(within(form).getByRole("button", { name: "Save" }));
    expect(await within(form).findByRole("alert")).toHaveTextContent("JOB_API_MAX_PRIORITY");
    await userEvent.clear(priority);
    await userEvent.type(priority, "-7");
    await userEvent.click(within(form).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(api.edits).toEqual([{ priority: 5 }, { priority: -7 }]));
    await waitFor(() => expect(screen.queryByRole("form", { name: "Edit job #7" })).toBeNull());
  });
});

describe("a job parked on a signal", () => {
  const parked = () =>
    detail({
      status: "queued",
      locked_by: null,
      lease_expires_at: null,
      awaiting_signal: "approved",
      events: [event(1, "created", -10), event(2, "parked", -5)],
    });

  it("offers Send signal only while the job waits for one", async () => {
    fakeJobApi();
    renderJob();
    await screen.findByRole("button", { name: "Cancel" });
    expect(screen.queryByRole("button", { name: "Send signal" })).toBeNull();
  });

  it("sends the signal it waits for with its JSON data, and says the job runs again", async () => {
    const api = fakeJobApi();
    api.detail = parked();
    api.feed = api.detail.events;
    renderJob();
    await userEvent.click(await screen.findByRole("button", { name: "Send signal" }));
    const form = screen.getByRole("form", { name: "Send a signal to job #7" });
    expect(within(form).getByLabelText("Signal name")).toHaveValue("approved");
    fireEvent.change(within(form).getByLabelText("Data (JSON)"), { target: { value: '{"by": "ann"}' } });
    await userEvent.click(within(form).getByRole("button", { name: "Send signal" }));
    await waitFor(() => expect(api.signals).toEqual([{ name: "approved", data: { by: "ann" } }]));
    expect(await screen.findByTestId("signal-outcome")).toHaveTextContent("it runs again now");
    await waitFor(() => expect(screen.queryByRole("button", { name: "Send signal" })).toBeNull());
  });
});
