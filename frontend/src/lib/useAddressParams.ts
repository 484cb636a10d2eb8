import { useCallback } from "react";
import { useSearchParams } from "react-router";

/**
 * The address's query parameters, and a change to them that builds on every change made
 * before it, even one the page has not re-rendered with yet.
 *
 * `useSearchParams`' setter (its function form too) starts from the parameters of the render
 * whose handler calls it: a second change made before React re-renders (a range clicked, then
 * a queue chosen at once, on a busy machine; or two panels of one page) would start from the
 * address as it was and undo the first. So each change is remembered with the address it
 * started from, and the next one, while the render still shows that address, starts from it.
 */
let pending: { from: string; next: URLSearchParams } | null = null;

export function useAddressParams(): [URLSearchParams, (change: (next: URLSearchParams) => void) => void] {
  const [params, setParams] = useSearchParams();
  const update = useCallback(
    (change: (next: URLSearchParams) => void) => {
      const from = params.toString();
      const next = new URLSearchParams(pending && pending.from === from ? pending.next : params);
      change(next);
      pending = { from, next };
      setParams(next, { replace: true });
    },
    [params, setParams],
  );
  return [params, update];
}

/** Set `key` to `value` in `params`, or remove it when the value is empty or its default. */
export function setOrDrop(params: URLSearchParams, key: string, value: string, fallback = ""): void {
  if (value && value !== fallback) params.set(key, value);
  else params.delete(key);
}
