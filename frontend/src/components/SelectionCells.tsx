/**
 * The selection's cells of a jobs table (the jobs and failed-jobs lists): the header's box that
 * selects every job on the page, labelled for a phone's card layout too, and each row's box.
 */
import type { Selection } from "../lib/useSelection";

export function SelectAllHeader({ selection }: { selection: Selection }) {
  return (
    <th className="card-select">
      <input
        type="checkbox"
        aria-label="Select every job on this page"
        checked={selection.allSelected}
        onChange={selection.toggleAll}
      />
      <span className="card-only" aria-hidden="true">
        Every job on this page
      </span>
    </th>
  );
}

export function SelectRowCell({ selection, id }: { selection: Selection; id: number }) {
  return (
    <td className="card-select">
      <input
        type="checkbox"
        aria-label={`Select job ${id}`}
        checked={selection.isSelected(id)}
        onChange={() => selection.toggle(id)}
      />
    </td>
  );
}
