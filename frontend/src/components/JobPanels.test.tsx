import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { JobDetail } from "../api/types";
import { AllFields, LeasePanel, RunFacts, runTime } from "./JobPanels";

const held = (fields: Partial<JobDetail>) =>
  ({
    status: "running",
    locked_by: "vm-1-4242-3",
    lease_expires_at: new Date(Date.now() + 20_000).toISOString(),
    lease_token: "t",
    cancel_requested_at: null,
    locked_by_state: "alive",
    locked_by_last_seen_at: new Date().toISOString(),
    ...fields,
  }) as JobDetail;

describe("the Lease card's owner", () => {
  it("says when the owner's worker process is lost, and when it was last seen", () => {
    render(<LeasePanel job={held({ locked_by_state: "lost" })} />);
    const state = screen.getByTestId("lease-owner-state");
    expect(state.dataset.state).toBe("lost");
    expect(state.textContent).toMatch(/lost.*last seen.*requeued when its lease expires/);
  });

  it("shows a live owner as alive, and nothing when the process is unknown", () => {
    const { unmount } = render(<LeasePanel job={held({})} />);
    expect(screen.getByTestId("lease-owner-state").textContent).toBe("alive ");
    unmount();
    render(<LeasePanel job={held({ locked_by_state: "unknown", locked_by_last_seen_at: null })} />);
    expect(screen.queryByTestId("lease-owner-state")).toBeNull();
  });
});

describe("a unique job", () => {
  const unique = {
    id: 9,
    status: "queued",
    created_at: new Date().toISOString(),
    available_at: new Date().toISOString(),
    started_at: null,
    finished_at: null,
    timeout_seconds: null,
    unique_key: "noop:key:invoice-93",
    unique_states: ["queued", "running"],
    idempotency_expires_at: null,
    retry_policy: { backoff: "exponential", base_seconds: 5 },
  } as unknown as JobDetail;

  it("lists its unique key, the states it holds it in, and its retry policy among all fields", () => {
    render(<AllFields job={unique} />);
    const fields = screen.getByTestId("job-fields");
    const value = (name: string) => within(fields).getByText(name).closest("div")!.querySelector("dd")!;
    expect(value("unique_key")).toHaveTextContent("noop:key:invoice-93");
    expect(value("unique_states")).toHaveTextContent("queued, running");
    expect(value("retry_policy")).toHaveTextContent('{"backoff":"exponential","base_seconds":5}');
  });

  it("lists its deadline and its debounce key among all fields", () => {
    const policies = {
      ...unique,
      expires_at: "2030-01-02T03:04:05Z",
      debounce_key: "noop:debounce:key:doc:42",
    } as unknown as JobDetail;
    render(<AllFields job={policies} />);
    const fields = screen.getByTestId("job-fields");
    const value = (name: string) => within(fields).getByText(name).closest("div")!.querySelector("dd")!;
    expect(value("expires_at")).toHaveTextContent("2030");
    expect(value("debounce_key")).toHaveTextContent("noop:debounce:key:doc:42");
  });

  it("says that an enqueue with its key returns it while it holds the key, and not after", () => {
    const { unmount } = render(<RunFacts job={unique} />);
    expect(screen.getByTestId("job-unique")).toHaveTextContent(
      "noop:key:invoice-93While it is queued or running, enqueuing a job with this key returns this job instead of a new one.",
    );
    unmount();
    render(<RunFacts job={{ ...unique, status: "succeeded" } as JobDetail} />);
    expect(screen.getByTestId("job-unique")).toHaveTextContent(
      "now succeeded, an enqueue with this key makes a new job",
    );
  });
});

describe("the Progress card's run time", () => {
  const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();
  const facts = (fields: Partial<JobDetail>) =>
    ({
      id: 5,
      status: "queued",
      created_at: ago(300),
      available_at: ago(300),
      started_at: null,
      finished_at: null,
      timeout_seconds: null,
      unique_key: null,
      ...fields,
    }) as JobDetail;

  it("says nothing of running for a queued job whose released claim left a start time", () => {
    render(<RunFacts job={facts({ status: "queued", started_at: ago(130) })} />);
    expect(screen.queryByText("Running for")).toBeNull();
    expect(screen.queryByTestId("run-time")).toBeNull();
  });

  it("counts a running job's time from its start, and a finished one's to its end", () => {
    const { unmount } = render(<RunFacts job={facts({ status: "running", started_at: ago(130) })} />);
    expect(screen.getByText("Running for")).toBeInTheDocument();
    expect(screen.getByTestId("run-time")).toHaveTextContent(/^2 min 1\d s$/);
    unmount();
    render(<RunFacts job={facts({ status: "failed", started_at: ago(130), finished_at: ago(100) })} />);
    expect(screen.getByText("Ran for")).toBeInTheDocument();
    expect(screen.getByTestId("run-time")).toHaveTextContent("30 s");
  });

  it("is known only while running or once finished", () => {
    const now = Date.parse("2026-01-01T00:10:00Z");
    const start = "2026-01-01T00:00:00Z";
    expect(runTime({ status: "queued", started_at: start, finished_at: null }, now)).toBeNull();
    expect(runTime({ status: "waiting", started_at: null, finished_at: null }, now)).toBeNull();
    expect(runTime({ status: "running", started_at: start, finished_at: null }, now)).toEqual({
      label: "Running for",
      ms: 600_000,
    });
    expect(runTime({ status: "cancelled", started_at: start, finished_at: "2026-01-01T00:01:00Z" }, now)).toEqual({
      label: "Ran for",
      ms: 60_000,
    });
  });
});
