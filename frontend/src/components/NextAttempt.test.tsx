import { render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { NextAttempt } from "./NextAttempt";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const base = { type: "charge", next_attempt: null, waiting_for_handler: false, unknown_type_at: null };

describe("NextAttempt", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it("says which attempt runs when, after which error, under which policy", () => {
    render(
      <NextAttempt
        job={{
          ...base,
          next_attempt: {
            attempt: 2,
            max_attempts: 5,
            at: new Date(NOW + 5_000).toISOString(),
            after_error: "ValueError: card service down\nTraceback ...",
            policy: "delays [1, 5, 30]",
          },
        }}
      />,
    );
    const text = screen.getByTestId("next-attempt").textContent ?? "";
    expect(text).toContain("Attempt 2 of 5 at");
    expect(text).toContain("(in 5.0 s)");
    expect(text).toContain("after ValueError: card service down;");
    expect(text).not.toContain("Traceback");
    expect(text).toContain("policy: delays [1, 5, 30]");
  });

  it("says the job waits for a worker that has its handler", () => {
    render(<NextAttempt job={{ ...base, waiting_for_handler: true, unknown_type_at: new Date(NOW).toISOString() }} />);
    expect(screen.getByTestId("next-attempt")).toHaveTextContent("Waiting for a worker that has a handler for charge");
  });

  it("shows nothing for a job that has not failed and waits for nothing", () => {
    const { container } = render(<NextAttempt job={base} />);
    expect(container).toBeEmptyDOMElement();
  });
});
