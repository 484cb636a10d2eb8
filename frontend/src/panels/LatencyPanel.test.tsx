import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router";
import { afterEach, describe, expect, it, vi } from "vitest";
import { latencySummary } from "../components/LatencyChart";
import { latencyPoint } from "../test/factories";
import { renderWithClient } from "../test/render";
import { LatencyPanel } from "./LatencyPanel";

const POINTS = [
  latencyPoint("2026-12-05T10:00:00Z", 4, {
    wait_p50_seconds: 2.5,
    wait_p95_seconds: 3.85,
    wait_p99_seconds: 3.97,
    run_p50_seconds: 25,
    run_p95_seconds: 38.5,
    run_p99_seconds: 39.7,
  }),
  latencyPoint("2026-12-05T10:01:00Z"),
  latencyPoint("2026-12-05T10:02:00Z", 1, {
    wait_p50_seconds: 0.5,
    wait_p95_seconds: 0.5,
    wait_p99_seconds: 0.5,
    run_p50_seconds: 1,
    run_p95_seconds: 1,
    run_p99_seconds: 1,
  }),
];

function Where() {
  const location = useLocation();
  return <output data-testid="where">{location.pathname + location.search}</output>;
}

function fakeApi(requested: URL[], points = POINTS) {
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: string) => {
      const url = new URL(input, "http://test");
      requested.push(url);
      const body = {
        range: "1h",
        bucket_seconds: 60,
        queue: null,
        type: null,
        by: null,
        series: [{ queue: null, points }],
      };
      return new Response(JSON.stringify(body), { status: 200 });
    }),
  );
}

afterEach(() => vi.unstubAllGlobals());

describe("the latency panel", () => {
  it("follows the throughput chart's range, queue and type from the address, and shows the waits' percentiles", async () => {
    const requested: URL[] = [];
    fakeApi(requested);
    renderWithClient(<LatencyPanel />, { at: "/?range=1h&queue=emails&type=send_email", path: "/" });
    const chart = await screen.findByTestId("latency-chart");
    expect(chart).toHaveAccessibleName(
      "wait of 5 jobs finished in the last 1 h, highest per bucket: p50 2.5 s, p95 3.9 s, p99 4.0 s",
    );
    expect(screen.getByRole("heading", { name: "Wait p50, p95, p99 per minute" })).toBeInTheDocument();
    const asked = requested.find((u) => u.pathname.endsWith("/metrics/latency/"))!;
    expect(Object.fromEntries(asked.searchParams)).toEqual({ range: "1h", queue: "emails", type: "send_email" });
  });

  it("switches to run times, kept in the address", async () => {
    fakeApi([]);
    renderWithClient(<LatencyPanel />, { at: "/?range=1h", path: "/", beside: <Where /> });
    await screen.findByTestId("latency-chart");
    await userEvent.click(screen.getByRole("button", { name: "Run time" }));
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent("/?range=1h&latency=run"));
    expect(screen.getByRole("button", { name: "Run time" })).toHaveAttribute("aria-pressed", "true");
    expect(screen.getByTestId("latency-chart")).toHaveAccessibleName(/^run time of 5 jobs .* p50 25 s, p95 38 s/);
  });

  it("says so when no job finished in the range", async () => {
    fakeApi([], [latencyPoint("2026-12-05T10:00:00Z")]);
    renderWithClient(<LatencyPanel />, { at: "/", path: "/" });
    expect(await screen.findByText("No jobs finished in this range")).toBeInTheDocument();
  });
});

describe("latencySummary", () => {
  it("names the highest of each percentile over the buckets that had jobs", () => {
    expect(latencySummary(POINTS, "run", "1 h")).toBe(
      "run time of 5 jobs finished in the last 1 h, highest per bucket: p50 25 s, p95 38 s, p99 39 s",
    );
    expect(latencySummary([latencyPoint("2026-12-05T10:00:00Z")], "wait", "15 min")).toBe(
      "No jobs finished in the last 15 min",
    );
  });
});
