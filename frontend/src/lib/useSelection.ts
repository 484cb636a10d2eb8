import { useMemo, useState } from "react";

type Picked = { filterKey: string; selected: Set<number>; allMatching: boolean };

/**
 * The selection over a job table: rows picked on the page, or every job matching the filter
 * (`allMatching`). Picks of rows that left the page are dropped, and a new filter starts
 * afresh. The jobs list and the failed-jobs page share it, so they behave alike.
 */
export function useSelection(rows: readonly { id: number }[], filters: object) {
  const filterKey = JSON.stringify(filters);
  const [state, setState] = useState<Picked>({ filterKey, selected: new Set(), allMatching: false });
  // Adjusted during render (not in an effect), so no frame shows a stale selection.
  let next = state.filterKey === filterKey ? state : { filterKey, selected: new Set<number>(), allMatching: false };
  const visible = new Set(rows.map((j) => j.id));
  const kept = [...next.selected].filter((id) => visible.has(id));
  if (kept.length !== next.selected.size) next = { ...next, selected: new Set(kept) };
  if (next !== state) setState(next);
  const { selected, allMatching } = next;
  return useMemo(() => {
    const set = (change: Partial<Picked>) => setState((s) => ({ ...s, filterKey, ...change }));
    const allSelected = allMatching || (rows.length > 0 && rows.every((j) => selected.has(j.id)));
    return {
      selected,
      setSelected: (ids: Set<number>) => set({ selected: ids }),
      allMatching,
      setAllMatching: (all: boolean) => set({ allMatching: all }),
      allSelected,
      isSelected: (id: number) => allMatching || selected.has(id),
      /** Unticking one row of "all matching" leaves the rest of the page picked. */
      toggle: (id: number) => {
        const picked = new Set(allMatching ? rows.map((j) => j.id) : selected);
        if (picked.has(id)) picked.delete(id);
        else picked.add(id);
        set({ selected: picked, allMatching: false });
      },
      toggleAll: () => set({ selected: allSelected ? new Set() : new Set(rows.map((j) => j.id)), allMatching: false }),
    };
  }, [rows, selected, allMatching, filterKey]);
}

export type Selection = ReturnType<typeof useSelection>;
