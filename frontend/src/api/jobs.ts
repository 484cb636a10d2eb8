/**
 * Jobs: query keys, query options and mutation options. Components use these with
 * useQuery/useMutation and never call the client themselves.
 */
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api, requestWithMeta } from "./client";
import { polling } from "./polling";
import { lastEventId, mergeEvents } from "../lib/events";
import { isFinishedStatus } from "../lib/statuses";
import type {
  EventPage,
  Job,
  JobCreate,
  JobEdit,
  JobActionResult,
  JobActions,
  JobDetail,
  JobEvent,
  JobListParams,
  JobPage,
  JobSignal,
  RetryMatching,
  RetryMatchingResult,
  ShardState,
  SignalSent,
} from "./types";

export const jobKeys = {
  all: ["jobs"] as const,
  lists: () => [...jobKeys.all, "list"] as const,
  list: (params: JobListParams) => [...jobKeys.lists(), params] as const,
  details: () => [...jobKeys.all, "detail"] as const,
  detail: (id: number) => [...jobKeys.details(), id] as const,
  events: (id: number) => [...jobKeys.all, "events", id] as const,
};

export const isFinished = (job: Pick<Job, "status">) => isFinishedStatus(job.status);

/** Drop empty filters so that equal filters make equal query keys. */
export function cleanParams(params: JobListParams): JobListParams {
  return Object.fromEntries(
    Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  ) as JobListParams;
}

export function jobListOptions(params: JobListParams, intervalMs = 3000) {
  const clean = cleanParams(params);
  return queryOptions({
    queryKey: jobKeys.list(clean),
    queryFn: ({ signal }) => api.get<JobPage>("jobs/", { query: clean, signal }),
    placeholderData: (previous) => previous,
    ...polling<JobPage>(intervalMs),
  });
}

/** The shards' aliases the merged list last named (its `shards`), from any list in the cache:
 * a list of one shard does not name the others. Empty without shards. */
export function knownShards(queryClient: QueryClient): string[] {
  for (const [, page] of queryClient.getQueriesData<JobPage>({ queryKey: jobKeys.lists() })) {
    if (page?.shards) return page.shards.map((s) => s.alias);
  }
  return [];
}

export function jobDetailOptions(id: number) {
  return queryOptions({
    queryKey: jobKeys.detail(id),
    queryFn: ({ signal }) => api.get<JobDetail>(`jobs/${id}/`, { signal }),
    // Live while the job can still change; a slow check afterwards (someone may retry it).
    ...polling<JobDetail>(1000, { stopWhen: isFinished, settledIntervalMs: 10_000 }),
  });
}

/** One poll of a job's event feed: every event after `after`, following `has_more`. */
export async function fetchJobEventsAfter(id: number, after: number | undefined, signal?: AbortSignal) {
  const events: JobEvent[] = [];
  let cursor = after ?? 0;
  for (let page = 0; page < 20; page++) {
    const body = await api.get<EventPage>(`jobs/${id}/events/`, { query: { after: cursor, limit: 200 }, signal });
    events.push(...body.results);
    if (!body.has_more || body.next_after === null || body.next_after === undefined) break;
    cursor = body.next_after;
  }
  return events;
}

/**
 * The job's timeline. Starts from the events the detail carries (its latest ones), then each
 * poll asks only for `events/?after=<last id>` and merges what arrives into what it has.
 */
export function jobEventsOptions(queryClient: QueryClient, id: number, seed: JobEvent[] | undefined, live: boolean) {
  const key = jobKeys.events(id);
  // `seed` only starts the timeline; the feed it grows into is one per job, whatever the seed.
  // eslint-disable-next-line @tanstack/query/exhaustive-deps
  return queryOptions({
    queryKey: key,
    queryFn: async ({ signal }) => {
      const known = mergeEvents(queryClient.getQueryData<JobEvent[]>(key) ?? [], seed ?? []);
      const fresh = await fetchJobEventsAfter(id, lastEventId(known), signal);
      return mergeEvents(known, fresh);
    },
    enabled: seed !== undefined,
    ...polling<JobEvent[]>(live ? 1000 : 10_000),
    // The feed only grows: keep what was fetched while the page is open.
    staleTime: live ? 0 : 5_000,
  });
}

/** The job detail carries only its latest events: fetch the whole history into the timeline. */
export const loadEarlierEventsMutation = (queryClient: QueryClient, id: number) => ({
  mutationFn: () => fetchJobEventsAfter(id, 0),
  onSuccess: (events: JobEvent[]) => {
    queryClient.setQueryData<JobEvent[]>(jobKeys.events(id), (known) => mergeEvents(known ?? [], events));
  },
});

export type CreateOutcome = { job: Job; replayed: boolean };

export const jobMutations = {
  create: (queryClient: QueryClient) => ({
    mutationFn: async (body: JobCreate): Promise<CreateOutcome> => {
      const response = await requestWithMeta<Job>("POST", "jobs/", { body });
      return { job: response.data, replayed: response.headers.get("X-Idempotency-Replay") === "true" };
    },
    onSuccess: ({ job }: CreateOutcome) => {
      queryClient.setQueryData(jobKeys.detail(job.id), undefined);
      void queryClient.invalidateQueries({ queryKey: jobKeys.lists() });
      void queryClient.invalidateQueries({ queryKey: ["metrics"] });
    },
  }),
  cancel: (queryClient: QueryClient) => ({
    mutationFn: (id: number) => api.post<Job>(`jobs/${id}/cancel/`),
    onSuccess: (job: Job) => applyAnswer(queryClient, job),
    onSettled: (_job: Job | undefined, _error: unknown, id: number) => invalidateJob(queryClient, id),
  }),
  retry: (queryClient: QueryClient) => ({
    mutationFn: (id: number) => api.post<Job>(`jobs/${id}/retry/`),
    onSuccess: (job: Job) => applyAnswer(queryClient, job),
    onSettled: (_job: Job | undefined, _error: unknown, id: number) => invalidateJob(queryClient, id),
  }),
  /** POST jobs/{id}/run_now/: a delayed job runnable at once (409 once it started). */
  runNow: (queryClient: QueryClient) => ({
    mutationFn: (id: number) => api.post<Job>(`jobs/${id}/run_now/`),
    onSuccess: (job: Job) => applyAnswer(queryClient, job),
    onSettled: (_job: Job | undefined, _error: unknown, id: number) => invalidateJob(queryClient, id),
  }),
  /** PATCH jobs/{id}/: a job that has not started gets a new priority and/or run time. */
  edit: (queryClient: QueryClient) => ({
    mutationFn: ({ id, body }: { id: number; body: JobEdit }) => api.patch<Job>(`jobs/${id}/`, body),
    onSuccess: (job: Job) => applyAnswer(queryClient, job),
    onSettled: (_job: Job | undefined, _error: unknown, { id }: { id: number; body: JobEdit }) =>
      invalidateJob(queryClient, id),
  }),
  /**
   * POST jobs/{id}/signal/: the signal a job's durable wait (`ctx.wait_for_signal`) returns;
   * a job parked for it runs again at once (`woke`). 409 for a finished job or a name sent before.
   */
  signal: (queryClient: QueryClient) => ({
    mutationFn: ({ id, body }: { id: number; body: JobSignal }) => api.post<SignalSent>(`jobs/${id}/signal/`, body),
    onSettled: (_answer: SignalSent | undefined, _error: unknown, { id }: { id: number; body: JobSignal }) =>
      invalidateJob(queryClient, id),
  }),
  /**
   * POST jobs/{id}/rerun/: a succeeded job enqueued again as a new job (201, the copy); the
   * original stays as it was. 409 for a job that did not succeed.
   */
  rerun: (queryClient: QueryClient) => ({
    mutationFn: (id: number) => api.post<Job>(`jobs/${id}/rerun/`),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: jobKeys.lists() });
      void queryClient.invalidateQueries({ queryKey: ["metrics"] });
    },
  }),
  /** DELETE jobs/{id}/: a finished job and its events go; the detail is dropped, not refetched. */
  delete: (queryClient: QueryClient) => ({
    mutationFn: (id: number) => api.delete(`jobs/${id}/`),
    onSuccess: (_answer: null, id: number) => {
      queryClient.removeQueries({ queryKey: jobKeys.detail(id) });
      queryClient.removeQueries({ queryKey: jobKeys.events(id) });
      void queryClient.invalidateQueries({ queryKey: jobKeys.lists() });
      void queryClient.invalidateQueries({ queryKey: ["metrics"] });
    },
  }),
};

/** Each database's state over several answers: down if any answer found it down. */
function mergeShardStates(first: ShardState[] | undefined, second: ShardState[] | undefined) {
  if (!first || !second) return first ?? second;
  return first.map((s) => (s.up ? (second.find((t) => t.alias === s.alias && !t.up) ?? s) : s));
}

/**
 * A bulk action to the end. The API bounds each request by filter (a share of the matching
 * jobs, so that it answers within a proxy's timeout) and answers where it stopped (`after`):
 * the same request is sent again from there until `after` is null, and the answers add up.
 */
export async function runJobAction(body: JobActions): Promise<JobActionResult> {
  let result = await api.post<JobActionResult>("jobs/actions/", body);
  while (result.after != null) {
    const next = await api.post<JobActionResult>("jobs/actions/", { ...body, after: result.after });
    result = {
      done: result.done + next.done,
      refused_count: result.refused_count + next.refused_count,
      refused: [...result.refused, ...next.refused].slice(0, 100),
      after: next.after,
      remaining: next.remaining,
      shards: mergeShardStates(result.shards, next.shards),
    };
  }
  return result;
}

/**
 * Bulk actions (`POST jobs/actions/`): cancel, retry or delete the given ids, or every job
 * matching the list's filters (request after request: runJobAction). Any job may have
 * changed: every job query is refetched.
 */
export const jobActionsMutation = (queryClient: QueryClient) => ({
  mutationFn: runJobAction,
  onSettled: () => {
    void queryClient.invalidateQueries({ queryKey: jobKeys.all });
    void queryClient.invalidateQueries({ queryKey: ["metrics"] });
  },
});

/**
 * The dead letter's bulk retry (`POST jobs/retry/`): the given ids (failed or cancelled ones go
 * back to the queue, the rest come back in `not_retried`), or every failed job matching a filter.
 */
export const retryMatchingMutation = (queryClient: QueryClient) => ({
  mutationFn: (body: RetryMatching) => api.post<RetryMatchingResult>("jobs/retry/", body),
  onSettled: () => {
    void queryClient.invalidateQueries({ queryKey: jobKeys.all });
    void queryClient.invalidateQueries({ queryKey: ["metrics"] });
  },
});

/**
 * An action answers with the job as it left it: the page shows that at once (its detail keeps
 * the events and fields the answer lacks), rather than the state before until the refetch.
 */
function applyAnswer(queryClient: QueryClient, job: Job) {
  queryClient.setQueryData<JobDetail>(jobKeys.detail(job.id), (known) => (known ? { ...known, ...job } : known));
}

function invalidateJob(queryClient: QueryClient, id: number) {
  void queryClient.invalidateQueries({ queryKey: jobKeys.detail(id) });
  void queryClient.invalidateQueries({ queryKey: jobKeys.events(id) });
  void queryClient.invalidateQueries({ queryKey: jobKeys.lists() });
  void queryClient.invalidateQueries({ queryKey: ["metrics"] });
}
