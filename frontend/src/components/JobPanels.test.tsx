import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { JobDetail } from "../api/types";
import { AllFields, LeasePanel, RunFacts } from "./JobPanels";

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
