import { describe, expect, it } from "vitest";
import { compactEvents, lastEventId, mergeEvents } from "./events";

const ev = (id: number, kind = "log") => ({ id, kind, created_at: null });

describe("mergeEvents", () => {
  it("appends new events in id order", () => {
    expect(mergeEvents([ev(1), ev(2)], [ev(3), ev(4)]).map((e) => e.id)).toEqual([1, 2, 3, 4]);
  });

  it("keeps one copy of an event delivered twice by overlapping polls", () => {
    const merged = mergeEvents([ev(1), ev(2), ev(3)], [ev(3), ev(2), ev(4)]);
    expect(merged.map((e) => e.id)).toEqual([1, 2, 3, 4]);
  });

  it("orders events that arrive out of order", () => {
    expect(mergeEvents([ev(5)], [ev(7), ev(2), ev(6)]).map((e) => e.id)).toEqual([2, 5, 6, 7]);
  });

  it("returns the same array when a poll brings nothing new, so nothing re-renders", () => {
    const existing = [ev(1), ev(2)];
    expect(mergeEvents(existing, [])).toBe(existing);
    expect(mergeEvents(existing, [ev(2)])).toBe(existing);
  });

  it("keeps the first copy of an id", () => {
    const first = { ...ev(1), kind: "created" };
    expect(mergeEvents([first], [{ ...ev(1), kind: "other" }])[0]).toBe(first);
  });
});

describe("lastEventId", () => {
  it("is the highest id, or undefined for an empty feed", () => {
    expect(lastEventId([])).toBeUndefined();
    expect(lastEventId([ev(3), ev(9), ev(4)])).toBe(9);
  });
});

describe("compactEvents", () => {
  it("folds runs of lease renewals and progress into one entry with a count", () => {
    const entries = compactEvents([
      ev(1, "created"),
      ev(2, "claimed"),
      ev(3, "progress"),
      ev(4, "lease_renewed"),
      ev(5, "lease_renewed"),
      ev(6, "lease_renewed"),
      ev(7, "progress"),
      ev(8, "progress"),
      ev(9, "succeeded"),
    ]);
    expect(entries.map((e) => [e.event.kind, e.event.id, e.count])).toEqual([
      ["created", 1, 1],
      ["claimed", 2, 1],
      ["progress", 3, 1],
      ["lease_renewed", 6, 3],
      ["progress", 8, 2],
      ["succeeded", 9, 1],
    ]);
    expect(entries[3].first.id).toBe(4);
  });

  it("never folds state changes, even repeated ones", () => {
    const entries = compactEvents([ev(1, "failed"), ev(2, "retried"), ev(3, "failed")]);
    expect(entries).toHaveLength(3);
    expect(compactEvents([ev(1, "log"), ev(2, "log")])).toHaveLength(2);
  });
});
