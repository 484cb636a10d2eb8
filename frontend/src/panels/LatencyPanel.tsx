import { useQuery } from "@tanstack/react-query";
import { latencyOptions } from "../api/metrics";
import type { ThroughputRange } from "../api/types";
import { LATENCY_KINDS, LatencyChart, type LatencyKind } from "../components/LatencyChart";
import { SegmentedButtons } from "../components/SegmentedButtons";
import { ErrorState, Loading } from "../components/States";
import { setOrDrop, useAddressParams } from "../lib/useAddressParams";
import { RANGES, bucketLabel } from "./ThroughputPanel";

/**
 * Wait and run time percentiles (p50, p95, p99) per bucket, beside the throughput chart, whose
 * range, queue and type it follows (the same address: ?range=1h&queue=emails&type=send_email);
 * `?latency=run` shows run times instead of waits. Its own query (GET metrics/latency/).
 */
export function LatencyPanel({ queue: fixedQueue }: { queue?: string }) {
  const [params, updateParams] = useAddressParams();
  const asked = params.get("range");
  const range: ThroughputRange = RANGES.some((r) => r.value === asked) ? (asked as ThroughputRange) : "15m";
  const kind: LatencyKind = params.get("latency") === "run" ? "run" : "wait";
  const queue = fixedQueue ?? params.get("queue") ?? "";
  const type = params.get("type") ?? "";
  const setKind = (value: LatencyKind) => updateParams((next) => setOrDrop(next, "latency", value, "wait"));
  const data = useQuery(latencyOptions({ range, queue: queue || undefined, type: type || undefined }));
  const rangeInfo = RANGES.find((r) => r.value === range)!;
  const what = LATENCY_KINDS.find((k) => k.value === kind)!;
  const scope = [queue && `queue ${queue}`, type && `type ${type}`].filter(Boolean).join(", ");
  return (
    <section className="panel" aria-labelledby="latency-title" data-testid="latency">
      <header>
        <h2 id="latency-title">
          {what.label} p50, p95, p99 {rangeInfo.per}
        </h2>
        <SegmentedButtons label="Wait or run time" choices={LATENCY_KINDS} value={kind} onChange={setKind} />
      </header>
      <p className="faint" style={{ margin: "0 0 8px" }}>
        {what.label} {what.what}, of the jobs that finished in each bucket
        {scope ? ` (${scope})` : ""}; the range, queue and type of the throughput chart.
      </p>
      {data.isPending ? (
        <Loading />
      ) : data.isError && !data.data ? (
        <ErrorState error={data.error} onRetry={() => void data.refetch()} />
      ) : (
        <LatencyChart
          points={data.data!.series[0]?.points ?? []}
          kind={kind}
          range={range}
          rangeLabel={rangeInfo.label}
          label={bucketLabel}
        />
      )}
    </section>
  );
}
