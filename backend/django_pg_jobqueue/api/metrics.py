"""GET /api/v1/metrics/, metrics/throughput/ and metrics/latency/: queue figures for
dashboards, and the schema-only shapes they answer with."""
from rest_framework import serializers
from rest_framework.response import Response

from .. import conf, merged, selectors
from .base import JobQueueAPIView
from .fields import ISODateTimeField, StrictSerializer, queue_name_field
from .permissions import VIEW, JobPermission
from .schema import errors, extend_schema
from .shards import ShardStateSerializer


class _Finished(serializers.Serializer):
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class _FinishedWindows(serializers.Serializer):
    last_1m = _Finished()
    last_5m = _Finished()
    last_15m = _Finished()


class _PriorityDepth(serializers.Serializer):
    priority = serializers.IntegerField()
    count = serializers.IntegerField()


class _QueueDepth(serializers.Serializer):
    queue = serializers.CharField()
    count = serializers.IntegerField()
    paused = serializers.BooleanField()


class _Queued(serializers.Serializer):
    total = serializers.IntegerField()
    runnable = serializers.IntegerField(help_text="Queued and due now.")
    scheduled = serializers.IntegerField(help_text="Queued for later (run_at, backoff).")
    by_priority = _PriorityDepth(many=True)
    by_queue = _QueueDepth(many=True)
    max_depth = serializers.IntegerField(allow_null=True, help_text="JOB_MAX_QUEUE_DEPTH (null: off).")


class _RunTime(serializers.Serializer):
    mean = serializers.FloatField(allow_null=True)
    p95 = serializers.FloatField(allow_null=True)
    sample_size = serializers.IntegerField(help_text="Jobs finished in the last 15 minutes.")


class _ThroughputPoint(serializers.Serializer):
    minute = ISODateTimeField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class _RunningJob(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    worker_id = serializers.CharField()
    started_at = ISODateTimeField(allow_null=True)
    progress_percent = serializers.IntegerField(allow_null=True)


class _WorkerProcess(serializers.Serializer):
    id = serializers.CharField()
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    threads = serializers.IntegerField()
    queues = serializers.ListField(child=serializers.CharField())
    state = serializers.ChoiceField(
        choices=["alive", "lost"],
        help_text="`lost`: silent for more than two of its heartbeat intervals (as on the workers "
                  "page); its running jobs are what it held, requeued when their leases expire.")
    started_at = ISODateTimeField()
    heartbeat_at = ISODateTimeField()
    running_jobs = _RunningJob(many=True)


class _Workers(serializers.Serializer):
    active = serializers.IntegerField(help_text="Processes alive: beating within two heartbeat "
                                                "intervals. A lost one is listed, not counted.")
    lost = serializers.IntegerField(help_text="Processes listed as lost.")
    threads = serializers.IntegerField()
    busy_threads = serializers.IntegerField()
    processes = _WorkerProcess(many=True)


# Also on a queue's page (queues.py: QueueDetailSerializer), for that queue's jobs.
class _CountsByStatus(serializers.Serializer):
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class _CountsByState(serializers.Serializer):
    """The jobs by the states an operator filters by (`?state=`): queued split in three."""

    available = serializers.IntegerField(help_text="Queued and due now.")
    scheduled = serializers.IntegerField(help_text="Queued for later, never attempted.")
    retryable = serializers.IntegerField(help_text="Queued for later after a failed attempt.")
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class ThroughputQuerySerializer(StrictSerializer):
    range = serializers.ChoiceField(choices=["15m", "1h", "24h"], default="15m", help_text=(
        "15m and 1h: per minute; 24h: per 30 minutes."))
    queue = queue_name_field(required=False, help_text="Only this queue's jobs.")
    type = serializers.CharField(required=False, max_length=100, help_text="Only this type's jobs.")


class _ThroughputBucket(serializers.Serializer):
    at = ISODateTimeField(help_text="The bucket's start.")
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class ThroughputSerializer(serializers.Serializer):
    range = serializers.CharField()
    bucket_seconds = serializers.IntegerField()
    queue = serializers.CharField(allow_null=True)
    type = serializers.CharField(allow_null=True)
    points = _ThroughputBucket(many=True, help_text="Every bucket of the range, oldest first.")
    shards = ShardStateSerializer(many=True, required=False, help_text=(
        "With JOB_SHARDS only: each database (JOB_DATABASE and every shard) and whether it "
        "answered; the figures are those of the ones that did."))


class LatencyQuerySerializer(ThroughputQuerySerializer):
    range = serializers.ChoiceField(choices=["15m", "1h", "24h"], default="1h", help_text=(
        "15m and 1h: per minute; 24h: per 30 minutes."))
    by = serializers.ChoiceField(
        choices=["queue"], required=False, allow_blank=True,
        help_text="queue: a series per queue that finished jobs in the range (the queues page's "
                  "sparklines); without it, one series.")


def _seconds(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=help_text)


class _LatencyBucket(serializers.Serializer):
    at = ISODateTimeField(help_text="The bucket's start.")
    jobs = serializers.IntegerField(help_text="Jobs that finished in the bucket (the samples).")
    wait_p50_seconds = _seconds("Median wait: from when the job was due to its claim.")
    wait_p95_seconds = _seconds("95th percentile of the wait.")
    wait_p99_seconds = _seconds("99th percentile of the wait.")
    run_p50_seconds = _seconds("Median run time: from its claim to its finish.")
    run_p95_seconds = _seconds("95th percentile of the run time.")
    run_p99_seconds = _seconds("99th percentile of the run time.")


class _LatencySeries(serializers.Serializer):
    queue = serializers.CharField(allow_null=True, help_text="Its queue (with by=queue), or null.")
    points = _LatencyBucket(many=True, help_text="Every bucket of the range, oldest first.")


class LatencySerializer(serializers.Serializer):
    range = serializers.CharField()
    bucket_seconds = serializers.IntegerField()
    queue = serializers.CharField(allow_null=True)
    type = serializers.CharField(allow_null=True)
    by = serializers.CharField(allow_null=True)
    series = _LatencySeries(many=True)
    shards = ShardStateSerializer(many=True, required=False, help_text=(
        "With JOB_SHARDS only: each database (JOB_DATABASE and every shard) and whether it "
        "answered; the figures are those of the ones that did."))


class MetricsSerializer(serializers.Serializer):
    generated_at = ISODateTimeField()
    counts_by_status = _CountsByStatus()
    counts_by_state = _CountsByState()
    queued = _Queued()
    oldest_runnable_age_seconds = serializers.FloatField(allow_null=True)
    finished = _FinishedWindows()
    run_time_seconds = _RunTime()
    retry_rate = serializers.FloatField(
        allow_null=True, help_text="Share of jobs finished in the last 15 minutes that took more than one attempt.")
    throughput = _ThroughputPoint(many=True, help_text="Succeeded and failed per minute, last 15 minutes, oldest first.")
    workers = _Workers()
    shards = ShardStateSerializer(many=True, required=False, help_text=(
        "With JOB_SHARDS only: each database (JOB_DATABASE and every shard) and whether it "
        "answered; the figures are those of the ones that did."))


class MetricsView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Queue figures for dashboards", tags=["metrics"],
        description="Counts by status; queued depth by priority and queue; the oldest runnable "
                    "job's age; succeeded and failed in the last 1, 5 and 15 minutes; mean and "
                    "p95 run time and retry rate over the last 15 minutes; succeeded/failed per "
                    "minute (15 points); active worker processes with the jobs they run. "
                    "With JOB_SHARDS, over every database: counts, depths, throughput and "
                    "workers summed, the oldest runnable age the oldest, the mean run time "
                    "and retry rate weighted by each database's finished jobs, p95 the highest "
                    "database's (an upper bound); `shards` says which answered (a 503 only "
                    "when none did).",
        responses={200: MetricsSerializer, **errors(401, 403, 503)},
    )
    def get(self, request):
        figures = merged.metrics() if conf.get().SHARDS else selectors.metrics()
        return Response(MetricsSerializer(figures).data)


class ThroughputView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Succeeded and failed jobs per bucket, over a range", tags=["metrics"],
        operation_id="v1_metrics_throughput_retrieve",
        description="`range` 15m or 1h: per minute; 24h: per 30 minutes. Every bucket is "
                    "present (zeros too), oldest first, named by its start. `queue` and `type` "
                    "narrow it to one queue's or one type's jobs. With JOB_SHARDS, over every "
                    "database: each bucket's counts summed; `shards` says which answered (a "
                    "503 only when none did).",
        parameters=[ThroughputQuerySerializer],
        responses={200: ThroughputSerializer, **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        query = ThroughputQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        read = merged.throughput if conf.get().SHARDS else selectors.throughput
        return Response(ThroughputSerializer(read(**query.validated_data)).data)


class LatencyView(JobQueueAPIView):
    permission_classes = [JobPermission]
    job_permission = VIEW

    @extend_schema(
        summary="Wait and run time percentiles per bucket, over a range", tags=["metrics"],
        operation_id="v1_metrics_latency_retrieve",
        description="p50, p95 and p99 (interpolated, `percentile_cont`) of the wait (from due to "
                    "claim) and of the run time (claim to finish), in seconds, of the jobs that "
                    "succeeded or failed in each bucket (their last attempt), with their count; "
                    "null for a bucket without any. Buckets as `metrics/throughput/`'s. `queue` "
                    "and `type` narrow it; `by=queue` answers a series per queue. With JOB_SHARDS, "
                    "over every database: each bucket's `jobs` summed, and each percentile "
                    "the highest of the databases that finished jobs in the bucket: an upper "
                    "bound, not the percentile of all their jobs (percentiles do not add; it "
                    "is exact when one database finished all of the bucket's jobs); `shards` "
                    "says which answered (a 503 only when none did).",
        parameters=[LatencyQuerySerializer],
        responses={200: LatencySerializer, **errors(400, 401, 403, 503)},
    )
    def get(self, request):
        query = LatencyQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = dict(query.validated_data)
        data["by_queue"] = data.pop("by", "") == "queue"
        read = merged.latency if conf.get().SHARDS else selectors.latency
        return Response(LatencySerializer(read(**data)).data)
