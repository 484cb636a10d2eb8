import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { JobDetail } from "../api/types";
import { LeasePanel } from "./JobPanels";

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
