import { useEffect, useState } from "react";

/** The current time, re-rendered every `intervalMs` (countdowns, "3 s ago"). */
export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), intervalMs);
    return () => window.clearInterval(timer);
  }, [intervalMs]);
  return now;
}

/** "850 ms", "4.2 s", "3 min 05 s", "2 h 10 min", "3 d 4 h". Negative inputs use their magnitude. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  const s = abs / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function formatSeconds(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? "—" : formatDuration(seconds * 1000);
}

/** "in 4.2 s" / "3 min ago", relative to `now`. */
export function formatRelative(iso: string | null | undefined, now: number): string {
  if (!iso) return "—";
  const delta = Date.parse(iso) - now;
  if (Number.isNaN(delta)) return "—";
  if (Math.abs(delta) < 1000) return "just now";
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(delta)} ago`;
}

/** "05 Dec 2026, 03:00:00 CET": a date and time with its time zone's name, in the browser's
 * time zone, or in `timeZone` (an IANA name, e.g. a schedule's own). */
export function formatTimestamp(iso: string | null | undefined, timeZone?: string): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "—";
  const options: Intl.DateTimeFormatOptions = {
    year: "numeric",
    month: "short",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hour12: false,
    timeZoneName: "short",
  };
  try {
    return d.toLocaleString(undefined, timeZone ? { ...options, timeZone } : options);
  } catch {
    // A time zone the browser does not know: the browser's own.
    return d.toLocaleString(undefined, options);
  }
}

export function formatClock(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "—";
  const base = d.toLocaleTimeString(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hour12: false,
  });
  return `${base}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}
