import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { StatusBadge, describeStatus } from "./StatusBadge";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const iso = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

describe("describeStatus", () => {
  it("shows each plain status as itself", () => {
    for (const status of ["queued", "running", "succeeded", "failed", "cancelled"]) {
      expect(describeStatus({ status, attempts: 1, max_attempts: 3 }, NOW).status).toBe(status);
    }
  });

  it("calls out a queued job waiting out its retry back-off", () => {
    const view = describeStatus({ status: "queued", attempts: 1, max_attempts: 3, available_at: iso(5000) }, NOW);
    expect(view).toMatchObject({ label: "retry scheduled", tone: "retrying", hint: "after attempt 1/3" });
  });

  it("calls out a delayed first run", () => {
    expect(describeStatus({ status: "queued", attempts: 0, available_at: iso(60_000) }, NOW).label).toBe("scheduled");
    expect(describeStatus({ status: "queued", attempts: 0, available_at: iso(-1) }, NOW).label).toBe("queued");
  });

  it("flags a running job whose lease ran out", () => {
    const view = describeStatus({ status: "running", lease_expires_at: iso(-2000) }, NOW);
    expect(view).toMatchObject({ label: "lease expired", tone: "stale" });
    expect(describeStatus({ status: "running", lease_expires_at: iso(2000) }, NOW).label).toBe("running");
  });

  it("shows a running job being cancelled", () => {
    expect(
      describeStatus({ status: "running", cancel_requested_at: iso(-10), lease_expires_at: iso(5000) }, NOW).label,
    ).toBe("cancelling");
  });

  it("shows a job waiting for its dependencies in its own style", () => {
    expect(describeStatus({ status: "waiting", attempts: 0 }, NOW)).toMatchObject({
      status: "waiting",
      label: "waiting",
      tone: "waiting",
      hint: "for the jobs it depends on",
    });
  });

  it("survives a status it does not know", () => {
    expect(describeStatus({ status: "archived" }, NOW)).toMatchObject({ label: "archived", tone: "unknown" });
  });
});

describe("StatusBadge", () => {
  it("renders the label with the raw status for styling and tests", () => {
    render(<StatusBadge job={{ status: "failed", attempts: 3, max_attempts: 3 }} now={NOW} />);
    const badge = screen.getByTestId("status-badge");
    expect(badge).toHaveTextContent("failed");
    expect(badge).toHaveAttribute("data-status", "failed");
    expect(badge).toHaveAttribute("title", "attempt 3/3");
    expect(badge).toHaveClass("badge-failed");
  });
});
