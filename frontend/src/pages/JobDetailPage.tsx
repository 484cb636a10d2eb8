/**
 * The job page's route: it reads the id, loads the job (polled while it can change) and its
 * event feed, and hands them to views/JobDetailView.tsx, which renders them, with the title row
 * and its actions (panels/JobHead.tsx).
 */
import { useEffect, useMemo } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useLocation, useParams } from "react-router";
import { isApiError } from "../api/client";
import { isFinished, jobDetailOptions, jobEventsOptions, jobKeys, loadEarlierEventsMutation } from "../api/jobs";
import { type CreatedState, JobHead } from "../panels/JobHead";
import { Empty, ErrorState, LiveIndicator, Loading } from "../components/States";
import { mergeEvents } from "../lib/events";
import { timelineAsOf } from "../lib/jobView";
import { JobDetailView } from "../views/JobDetailView";

export function JobDetailPage() {
  const params = useParams();
  const id = Number(params.id);
  if (!Number.isInteger(id) || id <= 0) {
    return (
      <div className="panel">
        <Empty title={`“${params.id}” is not a job id`}>
          <Link to="/jobs">All jobs</Link>
        </Empty>
      </div>
    );
  }
  return <JobDetailRoute key={id} id={id} />;
}

function JobDetailRoute({ id }: { id: number }) {
  const queryClient = useQueryClient();
  const location = useLocation();
  const created = (location.state ?? {}) as CreatedState;
  const job = useQuery(jobDetailOptions(id));
  const live = job.data ? !isFinished(job.data) : true;
  const events = useQuery(jobEventsOptions(queryClient, id, job.data?.events, live));
  // The detail (polled every second) also carries the latest events: show them at once rather
  // than at the feed's next poll. And when the status changes, poll the feed right away.
  const merged = useMemo(() => mergeEvents(events.data ?? [], job.data?.events ?? []), [events.data, job.data?.events]);
  // One source of truth: the timeline shows what the detail's snapshot knows (lib/jobView.ts).
  const { shown: timeline, heldBack } = useMemo(
    () => (job.data ? timelineAsOf(job.data, merged) : { shown: merged, heldBack: null }),
    [job.data, merged],
  );
  // The feed saw a change the detail does not show yet: read the detail now, not in a second.
  const heldBackId = heldBack?.id;
  const { refetch: refetchJob } = job;
  useEffect(() => {
    if (heldBackId !== undefined) void refetchJob();
  }, [heldBackId, refetchJob]);
  const earlier = useMutation(loadEarlierEventsMutation(queryClient, id));
  const status = job.data?.status;
  useEffect(() => {
    if (status) void queryClient.invalidateQueries({ queryKey: jobKeys.events(id) });
  }, [status, id, queryClient]);

  useEffect(() => {
    document.title = job.data ? `#${id} ${job.data.type} (${job.data.status}) · Job queue` : `Job #${id} · Job queue`;
    return () => {
      document.title = "Job queue";
    };
  }, [id, job.data]);

  if (job.isPending)
    return (
      <div className="panel">
        <Loading rows={8} label="Loading the job…" />
      </div>
    );
  if (job.isError && !job.data) {
    if (isApiError(job.error, 404)) {
      return (
        <div className="panel">
          <Empty title={`Job #${id} does not exist`}>
            <p>
              It may have been pruned. <Link to="/jobs">All jobs</Link>
            </p>
          </Empty>
        </div>
      );
    }
    return <ErrorState error={job.error} onRetry={() => void job.refetch()} />;
  }
  return (
    <JobDetailView
      job={job.data!}
      head={
        <JobHead
          job={job.data!}
          created={created}
          live={<LiveIndicator isError={job.isError} error={job.error} isFetching={job.isFetching} paused={!live} />}
        />
      }
      refreshError={job.isError ? job.error : null}
      timeline={{
        events: timeline,
        isPending: events.isPending,
        error: events.isError && !events.data ? events.error : null,
        onRetry: () => void events.refetch(),
        live: (
          <LiveIndicator isError={events.isError} error={events.error} isFetching={events.isFetching} paused={!live} />
        ),
        earlier: { load: () => earlier.mutate(), isPending: earlier.isPending, error: earlier.error },
      }}
    />
  );
}
