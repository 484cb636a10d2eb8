/**
 * Wait or run time percentiles (p50, p95, p99) per bucket, as lines; and the queues page's
 * sparkline of one percentile. Given the API's answer (GET metrics/latency/), no query.
 */
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { LatencyPoint, ThroughputRange } from "../api/types";
import { formatSeconds } from "../lib/time";
import { Empty } from "./States";

export type LatencyKind = "wait" | "run";

export const LATENCY_KINDS: readonly { value: LatencyKind; label: string; what: string }[] = [
  { value: "wait", label: "Wait", what: "from due to claimed" },
  { value: "run", label: "Run time", what: "from claimed to finished" },
];

const PERCENTILES = [
  { key: "p50", color: "var(--succeeded)" },
  { key: "p95", color: "var(--retrying)" },
  { key: "p99", color: "var(--failed)" },
] as const;

type Percentile = (typeof PERCENTILES)[number]["key"];

/** A point's figure: `wait_p95_seconds` ... */
export const figure = (p: LatencyPoint, kind: LatencyKind, pct: Percentile) =>
  p[`${kind}_${pct}_seconds` as keyof LatencyPoint] as number | null;

/** What the chart shows, in words (its accessible name): the range's worst p50, p95, p99. */
export function latencySummary(points: LatencyPoint[], kind: LatencyKind, rangeLabel: string): string {
  const jobs = points.reduce((n, p) => n + p.jobs, 0);
  const worst = (pct: Percentile) =>
    Math.max(...points.map((p) => figure(p, kind, pct)).filter((v): v is number => v !== null));
  const label = LATENCY_KINDS.find((k) => k.value === kind)!.label.toLowerCase();
  if (jobs === 0) return `No jobs finished in the last ${rangeLabel}`;
  return (
    `${label} of ${jobs} jobs finished in the last ${rangeLabel}, highest per bucket: ` +
    PERCENTILES.map(({ key }) => `${key} ${formatSeconds(worst(key))}`).join(", ")
  );
}

export function LatencyChart({
  points,
  kind,
  range,
  rangeLabel,
  label,
}: {
  points: LatencyPoint[];
  kind: LatencyKind;
  range: ThroughputRange;
  rangeLabel: string;
  /** How a bucket's start is written on the axis. */
  label: (iso: string, range: ThroughputRange) => string;
}) {
  if (points.every((p) => p.jobs === 0)) return <Empty title="No jobs finished in this range" />;
  const data = points.map((p) => ({
    at: label(p.at, range),
    jobs: p.jobs,
    ...Object.fromEntries(PERCENTILES.map(({ key }) => [key, figure(p, kind, key)])),
  }));
  return (
    <div className="chart" role="img" aria-label={latencySummary(points, kind, rangeLabel)} data-testid="latency-chart">
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -4 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="var(--chart-grid)" />
          <XAxis
            dataKey="at"
            tick={{ fill: "var(--muted)", fontSize: 11 }}
            interval="preserveStartEnd"
            minTickGap={24}
          />
          <YAxis
            tick={{ fill: "var(--muted)", fontSize: 12 }}
            tickFormatter={(v: number) => formatSeconds(v)}
            width={56}
          />
          <Tooltip
            contentStyle={{ background: "var(--panel)", border: "1px solid var(--border)", color: "var(--text)" }}
            formatter={(v, name) => [formatSeconds(v as number), name]}
          />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {PERCENTILES.map(({ key, color }) => (
            <Line
              key={key}
              dataKey={key}
              stroke={color}
              strokeWidth={2}
              dot={false}
              connectNulls
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}

/**
 * One figure over the range as a small line, no axes (the queues page): its latest value is
 * said beside it, and its accessible name says the range's highest.
 */
export function Sparkline({
  points,
  kind,
  pct,
  name,
}: {
  points: LatencyPoint[];
  kind: LatencyKind;
  pct: Percentile;
  name: string;
}) {
  const values = points.map((p) => figure(p, kind, pct));
  const known = values.filter((v): v is number => v !== null);
  if (known.length === 0) return <span className="faint">no jobs finished</span>;
  const data = values.map((v, i) => ({ i, v }));
  return (
    <span className="sparkline">
      <span
        className="sparkline-chart"
        role="img"
        aria-label={`${name}: ${kind} ${pct} up to ${formatSeconds(Math.max(...known))}, latest ${formatSeconds(known.at(-1))}`}
      >
        <ResponsiveContainer width="100%" height="100%">
          <LineChart data={data} margin={{ top: 2, right: 2, bottom: 2, left: 2 }}>
            <YAxis hide domain={[0, "dataMax"]} />
            <Line
              dataKey="v"
              stroke="var(--accent)"
              strokeWidth={1.5}
              dot={false}
              connectNulls
              isAnimationActive={false}
            />
          </LineChart>
        </ResponsiveContainer>
      </span>
      <span className="sparkline-value">{formatSeconds(known.at(-1))}</span>
    </span>
  );
}
