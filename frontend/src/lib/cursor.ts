/** The `cursor` of a merged job list's `next` URL (undefined: no next page). */
export function nextCursor(next: string | null | undefined): string | undefined {
  if (!next) return undefined;
  return new URL(next, "http://x").searchParams.get("cursor") ?? undefined;
}
