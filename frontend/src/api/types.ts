/**
 * Names for the API's types. Every shape comes from `schema.d.ts`, generated from the
 * backend's OpenAPI schema (`npm run gen:api`); nothing here restates a field by hand.
 */
import type { components, paths } from "./schema";

type Schemas = components["schemas"];

export type Job = Schemas["Job"];
export type JobDetail = Schemas["JobDetail"];
export type JobEvent = Schemas["Event"];
export type EventPage = Schemas["EventPage"];
export type FeedEvent = Schemas["FeedEvent"];
export type FeedPage = Schemas["FeedPage"];
export type JobType = Schemas["JobType"];
export type JobCreate = Schemas["JobCreateRequest"];
export type JobEdit = Schemas["PatchedJobEditRequest"];
export type JobSignal = Schemas["SignalRequest"];
export type SignalSent = Schemas["SignalSent"];
export type JobPage = Schemas["PaginatedJobList"];
export type Metrics = Schemas["Metrics"];
export type User = Schemas["User"];
export type Queue = Schemas["Queue"];
export type QueueDetail = Schemas["QueueDetail"];
export type Batch = Schemas["Batch"];
export type Throughput = Schemas["Throughput"];
export type ThroughputParams = NonNullable<paths["/api/v1/metrics/throughput/"]["get"]["parameters"]["query"]>;
export type ThroughputRange = NonNullable<ThroughputParams["range"]>;
export type JobSuggestions = Schemas["JobSuggestions"];
export type Latency = Schemas["Latency"];
export type LatencyPoint = Latency["series"][number]["points"][number];
export type LatencyParams = NonNullable<paths["/api/v1/metrics/latency/"]["get"]["parameters"]["query"]>;
export type JobSuggestionsParams = paths["/api/v1/jobs/suggestions/"]["get"]["parameters"]["query"];
export type Schedule = Schemas["Schedule"];
export type ScheduleTick = Schemas["ScheduleTick"];
export type Worker = Schemas["Worker"];
export type LostWorker = Schemas["LostWorker"];
export type WorkerOverride = Schemas["WorkerOverride"];
export type WorkerOverrideSet = Schemas["WorkerOverrideSetRequest"];
export type RetryMatching = Schemas["JobRetryMatchingRequest"];
export type RetryMatchingResult = Schemas["JobRetryMatchingResult"];
export type JobActions = Schemas["JobActionRequest"];
export type JobActionFilter = Schemas["JobActionFilterRequest"];
export type JobActionResult = Schemas["JobActionResult"];
export type BulkAction = JobActions["action"];
export type JobStatus = Job["status"];
export type AuditLogEntry = Schemas["AuditLogEntry"];
export type AuditLogPage = Schemas["PaginatedAuditLogEntryList"];
/** The audit log's query parameters (filters and page), as the API declares them. */
export type AuditLogParams = NonNullable<paths["/api/v1/audit/"]["get"]["parameters"]["query"]>;
export type AuditAction = AuditLogEntry["action"];

/** One database of JOB_SHARDS (JOB_DATABASE's or a shard's) and whether it answered. */
export type ShardState = Schemas["ShardState"];
/** The merged job list's: a ShardState with its count of the matching jobs. */
export type ShardCount = NonNullable<JobPage["shards"]>[number];

export type WorkerProcess = Metrics["workers"]["processes"][number];
export type ThroughputPoint = Metrics["throughput"][number];

/** The job list's query parameters, exactly as the API declares them. */
export type JobListParams = NonNullable<paths["/api/v1/jobs/"]["get"]["parameters"]["query"]>;
export type RateLimit = Schemas["RateLimit"];
export type RateLimitSet = Schemas["RateLimitSetRequest"];
