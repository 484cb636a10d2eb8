/**
 * The audit log's route: its filters and page live in the address (a filtered log can be
 * bookmarked and shared); views/AuditLogView.tsx renders the entries.
 */
import { useQuery } from "@tanstack/react-query";
import { useCallback, useMemo } from "react";
import { useSearchParams } from "react-router";
import { auditLogOptions } from "../api/audit";
import type { AuditLogParams } from "../api/types";
import { PAGE_SIZES } from "../components/Pager";
import { AUDIT_FILTERS, type AuditFilters, AuditLogView } from "../views/AuditLogView";

export function AuditLogPage() {
  const [params, setParams] = useSearchParams();
  const filters = useMemo(() => {
    const values: AuditFilters = {};
    for (const key of AUDIT_FILTERS) values[key] = params.get(key) ?? undefined;
    return values;
  }, [params]);
  const page = Math.max(1, Number(params.get("page")) || 1);
  const asked = Number(params.get("page_size"));
  const pageSize = (PAGE_SIZES as readonly number[]).includes(asked) ? asked : PAGE_SIZES[0];
  const entries = useQuery(
    auditLogOptions({
      ...(filters as Omit<AuditLogParams, "page" | "page_size">),
      page: page > 1 ? page : undefined,
      page_size: pageSize,
    }),
  );
  const go = useCallback(
    (next: AuditFilters, at: { page?: number; pageSize?: number } = {}) => {
      const p = new URLSearchParams();
      for (const key of AUDIT_FILTERS) {
        const value = next[key]?.trim();
        if (value) p.set(key, value);
      }
      if (at.page && at.page > 1) p.set("page", String(at.page));
      const size = at.pageSize ?? pageSize;
      if (size !== PAGE_SIZES[0]) p.set("page_size", String(size));
      setParams(p);
    },
    [pageSize, setParams],
  );
  return (
    <AuditLogView
      entries={entries}
      filters={filters}
      page={page}
      pageSize={pageSize}
      onFilters={(next) => go(next)}
      onPage={(n) => go(filters, { page: n })}
      onPageSize={(n) => go(filters, { pageSize: n })}
    />
  );
}
