import { useCallback, useMemo } from "react";
import { useNavigate, useSearchParams } from "react-router";
import type { JobListParams } from "../api/types";
import type { FilterValues } from "../components/JobFilters";
import { PAGE_SIZES } from "../components/Pager";

/** Every filter of the job list, as its URL names it. */
export const FILTER_KEYS = [
  "status",
  "state",
  "type",
  "queue",
  "priority",
  "search",
  "ordering",
  "schedule",
  "concurrency_key",
  "payload",
  "shard",
] as const;

/**
 * Filters and page live in the URL, so a filtered list can be bookmarked, shared and survives
 * a reload; changing a filter goes back to page 1.
 */
export function useFilterParams(defaults: FilterValues = {}) {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const values = useMemo(() => {
    const v: FilterValues = { ...defaults };
    for (const k of FILTER_KEYS) {
      const value = params.get(k);
      if (value !== null) v[k] = value;
    }
    return v;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [params]);
  const page = Math.max(1, Number(params.get("page")) || 1);
  // With shards, the merged list pages by cursor: the one its `next` gave.
  const cursor = params.get("cursor") || undefined;
  // One of the offered sizes, else the page's own default.
  const askedSize = Number(params.get("page_size"));
  const pageSize = (PAGE_SIZES as readonly number[]).includes(askedSize) ? askedSize : undefined;

  const setValues = useCallback(
    (next: FilterValues) => {
      const p = new URLSearchParams();
      const size = params.get("page_size");
      if (size) p.set("page_size", size);
      for (const k of FILTER_KEYS) {
        const value = next[k]?.toString().trim();
        if (value && value !== defaults[k]) p.set(k, value);
      }
      // Lists stay readable in the address (`state=available,retryable`), not `%2C`-encoded.
      const search = p.toString().replace(/%2C/gi, ",");
      void navigate({ search: search ? `?${search}` : "" });
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [params, navigate],
  );
  const setPage = useCallback(
    (n: number) => {
      const p = new URLSearchParams(params);
      p.delete("cursor");
      if (n <= 1) p.delete("page");
      else p.set("page", String(n));
      setParams(p);
    },
    [params, setParams],
  );
  /** The merged list's page after `next` (undefined: its first page). */
  const setCursor = useCallback(
    (next: string | undefined) => {
      const p = new URLSearchParams(params);
      p.delete("page");
      if (next) p.set("cursor", next);
      else p.delete("cursor");
      setParams(p);
    },
    [params, setParams],
  );
  /** A new page size starts at page 1. */
  const setPageSize = useCallback(
    (n: number) => {
      const p = new URLSearchParams(params);
      p.delete("page");
      p.delete("cursor");
      p.set("page_size", String(n));
      setParams(p);
    },
    [params, setParams],
  );
  return { values, page, cursor, pageSize, setValues, setPage, setCursor, setPageSize };
}

/** The filter form's strings as the API's typed list parameters. */
export function toListParams(values: FilterValues, page: number, pageSize: number, cursor?: string): JobListParams {
  const given = values.priority?.trim();
  const priority = given ? (/^-?\d+$/.test(given) ? Number(given) : given) : undefined;
  return {
    // As the address says: the API judges the values, and a 400 names what it refused.
    status: values.status ? (values.status.split(",") as JobListParams["status"]) : undefined,
    state: values.state ? (values.state.split(",") as JobListParams["state"]) : undefined,
    type: values.type || undefined,
    queue: values.queue || undefined,
    // Not a whole number ("abc"): sent as it is, for the API to refuse by name.
    priority: priority as number | undefined,
    search: values.search?.trim() || undefined,
    schedule: values.schedule || undefined,
    concurrency_key: values.concurrency_key?.trim() || undefined,
    payload: values.payload?.trim() || undefined,
    ordering: values.ordering || undefined,
    page: page > 1 ? page : undefined,
    page_size: pageSize,
    ...(values.shard ? { shard: values.shard } : {}),
    ...(cursor ? { cursor } : {}),
  };
}
