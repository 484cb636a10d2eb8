import { act, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LeaseCountdown, leaseState } from "./LeaseCountdown";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const iso = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

describe("leaseState", () => {
  it("counts down a healthy lease", () => {
    expect(leaseState(iso(25_000), NOW)).toMatchObject({ tone: "ok", text: "expires in 25 s" });
  });

  it("warns when the deadline is close", () => {
    expect(leaseState(iso(3_200), NOW)).toMatchObject({ tone: "warn", text: "expires in 3.2 s" });
  });

  it("says how long ago an unrenewed lease expired", () => {
    expect(leaseState(iso(-90_000), NOW)).toMatchObject({ tone: "expired", text: "expired 1 min 30 s ago" });
  });
});

describe("LeaseCountdown", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it("ticks towards expiry, warns once most of the lease is gone, then shows it expired", () => {
    render(<LeaseCountdown expiresAt={iso(10_000)} tickMs={250} />);
    const el = screen.getByTestId("lease-countdown");
    expect(el).toHaveTextContent("expires in 10 s");
    expect(el).toHaveClass("lease-ok");
    act(() => vi.advanceTimersByTime(5_000));
    expect(el).toHaveTextContent("expires in 5.0 s");
    expect(el).toHaveClass("lease-ok");
    act(() => vi.advanceTimersByTime(2_000));
    expect(el).toHaveTextContent("expires in 3.0 s");
    expect(el).toHaveClass("lease-warn");
    act(() => vi.advanceTimersByTime(4_000));
    expect(el).toHaveTextContent("expired 1.0 s ago");
    expect(el).toHaveClass("lease-expired");
  });

  it("goes back to healthy when the worker renews the lease", () => {
    const { rerender } = render(<LeaseCountdown expiresAt={iso(6_000)} tickMs={250} />);
    const el = screen.getByTestId("lease-countdown");
    act(() => vi.advanceTimersByTime(4_500));
    expect(el).toHaveClass("lease-warn");
    rerender(<LeaseCountdown expiresAt={iso(4_500 + 6_000)} tickMs={250} />);
    act(() => vi.advanceTimersByTime(250));
    expect(el).toHaveClass("lease-ok");
    expect(el).toHaveTextContent("expires in 5.8 s");
  });

  it("says so when the job holds no lease", () => {
    render(<LeaseCountdown expiresAt={null} />);
    expect(screen.getByText("no lease")).toBeInTheDocument();
  });
});
