/** The audit log: who did what to which job, queue or schedule (GET audit/), newest first. */
import { queryOptions } from "@tanstack/react-query";
import { api } from "./client";
import { polling } from "./polling";
import type { AuditLogPage, AuditLogParams } from "./types";

export const auditKeys = {
  all: ["audit"] as const,
  list: (params: AuditLogParams) => [...auditKeys.all, "list", params] as const,
};

/** Drop blank filters so that equal filters make equal query keys. */
function clean(params: AuditLogParams): AuditLogParams {
  return Object.fromEntries(
    Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  ) as AuditLogParams;
}

/** One page of the log; polled slowly (operators act now and then), kept while the next loads. */
export function auditLogOptions(params: AuditLogParams, intervalMs = 10_000) {
  const cleaned = clean(params);
  return queryOptions({
    queryKey: auditKeys.list(cleaned),
    queryFn: ({ signal }) => api.get<AuditLogPage>("audit/", { query: cleaned, signal }),
    placeholderData: (previous) => previous,
    ...polling<AuditLogPage>(intervalMs),
  });
}
