import { useQuery } from "@tanstack/react-query";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { jobTypesOptions } from "../api/jobTypes";
import { throughputOptions } from "../api/metrics";
import { queuesOptions } from "../api/queues";
import type { Throughput, ThroughputRange } from "../api/types";
import { FilterSelect } from "../components/JobFilters";
import { SegmentedButtons } from "../components/SegmentedButtons";
import { Empty, ErrorState, Loading } from "../components/States";
import { setOrDrop, useAddressParams } from "../lib/useAddressParams";

// The stylesheet's tokens, so the chart follows the light or dark theme.
const GRID = "var(--chart-grid)";
const TICK = { fill: "var(--muted)" };
const TOOLTIP = {
  contentStyle: { background: "var(--panel)", border: "1px solid var(--border)", color: "var(--text)" },
  cursor: { fill: "var(--accent-soft)" },
};

export const RANGES: readonly { value: ThroughputRange; label: string; per: string }[] = [
  { value: "15m", label: "15 min", per: "per minute" },
  { value: "1h", label: "1 h", per: "per minute" },
  { value: "24h", label: "24 h", per: "per 30 minutes" },
];

/** "12:30" for a bucket; with the day when the range spans one. */
export function bucketLabel(iso: string, range: ThroughputRange): string {
  const d = new Date(iso);
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
  return range === "24h" ? `${d.toLocaleDateString(undefined, { weekday: "short" })} ${time}` : time;
}

/**
 * Succeeded and failed jobs per bucket, with its range (15 min, 1 h, 24 h) and, unless the page
 * fixes them, filters by queue and type. Its own query (GET metrics/throughput/).
 */
export function ThroughputPanel({ queue: fixedQueue }: { queue?: string }) {
  // The chart's filters live in the address (?range=1h&queue=emails&type=send_email): a reload,
  // a bookmark or a shared link shows the same chart.
  const [params, updateParams] = useAddressParams();
  const asked = params.get("range");
  const range: ThroughputRange = RANGES.some((r) => r.value === asked) ? (asked as ThroughputRange) : "15m";
  const queue = params.get("queue") ?? "";
  const type = params.get("type") ?? "";
  const setParam = (key: string, value: string, fallback = "") =>
    updateParams((next) => setOrDrop(next, key, value, fallback));
  const setRange = (value: ThroughputRange) => setParam("range", value, "15m");
  const setQueue = (value: string) => setParam("queue", value);
  const setType = (value: string) => setParam("type", value);
  const shownQueue = fixedQueue ?? queue;
  const data = useQuery(throughputOptions({ range, queue: shownQueue || undefined, type: type || undefined }));
  const queues = useQuery({ ...queuesOptions(), enabled: fixedQueue === undefined });
  const types = useQuery(jobTypesOptions());
  const per = RANGES.find((r) => r.value === range)!.per;
  return (
    <section className="panel" aria-labelledby="throughput-title" data-testid="throughput">
      <header>
        <h2 id="throughput-title">Throughput, jobs {per}</h2>
        <SegmentedButtons label="Throughput range" choices={RANGES} value={range} onChange={setRange} />
      </header>
      <div className="filters" style={{ marginBottom: 8 }}>
        {fixedQueue === undefined && (
          <FilterSelect
            id="tp-queue"
            label="Queue"
            value={queue}
            choices={(queues.data ?? []).map((q) => q.name)}
            onChange={setQueue}
          />
        )}
        <FilterSelect
          id="tp-type"
          label="Type"
          value={type}
          choices={(types.data ?? []).map((t) => t.name)}
          onChange={setType}
        />
      </div>
      {data.isPending ? (
        <Loading />
      ) : data.isError && !data.data ? (
        <ErrorState error={data.error} onRetry={() => void data.refetch()} />
      ) : (
        <ThroughputChart t={data.data!} />
      )}
    </section>
  );
}

export function throughputSummary(t: Throughput): string {
  const ok = t.points.reduce((n, p) => n + p.succeeded, 0);
  const bad = t.points.reduce((n, p) => n + p.failed, 0);
  const label = RANGES.find((r) => r.value === t.range)?.label ?? t.range;
  const scope = [t.queue && `queue ${t.queue}`, t.type && `type ${t.type}`].filter(Boolean).join(", ");
  return `${ok} succeeded and ${bad} failed in the last ${label}${scope ? ` (${scope})` : ""}`;
}

function ThroughputChart({ t }: { t: Throughput }) {
  const total = t.points.reduce((n, p) => n + p.succeeded + p.failed, 0);
  if (total === 0) return <Empty title="No jobs finished in this range" />;
  const data = t.points.map((p) => ({ ...p, at: bucketLabel(p.at, t.range as ThroughputRange) }));
  return (
    <div className="chart" role="img" aria-label={throughputSummary(t)} data-testid="throughput-chart">
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -12 }} barCategoryGap="18%">
          <CartesianGrid strokeDasharray="3 3" vertical={false} stroke={GRID} />
          <XAxis dataKey="at" tick={{ ...TICK, fontSize: 11 }} interval="preserveStartEnd" minTickGap={24} />
          <YAxis allowDecimals={false} tick={{ ...TICK, fontSize: 12 }} />
          <Tooltip {...TOOLTIP} />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Bar dataKey="succeeded" stackId="finished" fill="var(--succeeded)" isAnimationActive={false} />
          <Bar
            dataKey="failed"
            stackId="finished"
            fill="var(--failed)"
            radius={[3, 3, 0, 0]}
            isAnimationActive={false}
          />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
