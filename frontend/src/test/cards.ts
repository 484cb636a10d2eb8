import { expect } from "vitest";

/** Cells that say what they are without a label on a phone's card (styles.css, `table.cards`). */
const SELF_EXPLAINED = ["card-select", "card-title", "card-status", "card-action", "card-plain"];

/**
 * A table that becomes cards on a phone names each cell there by its column's header (the
 * cell's data-label, shown before its value): check that every labelled cell carries its own
 * header's words (no label drifted from a renamed or moved column), and that every cell
 * without one is one that needs none (the checkbox, the row's name, its status, its buttons).
 */
export function expectCardLabels(table: HTMLElement) {
  expect(table.classList.contains("cards"), "the table becomes cards on a phone").toBe(true);
  const t = table as HTMLTableElement;
  const heads = [...t.tHead!.rows[0].cells].map((th) => (th.querySelector(".sr-only") ? null : th.textContent!.trim()));
  let checked = 0;
  for (const row of t.tBodies[0].rows) {
    if (row.cells.length !== heads.length) continue; // a row spanning the table (a tick history)
    [...row.cells].forEach((td, i) => {
      const label = td.dataset.label;
      if (label === undefined) {
        expect(
          SELF_EXPLAINED.some((c) => td.classList.contains(c)),
          `column ${i} ("${heads[i]}") has no label on a phone: ${td.outerHTML.slice(0, 120)}`,
        ).toBe(true);
      } else {
        expect(label, `column ${i}'s label on a phone`).toBe(heads[i]);
      }
      checked += 1;
    });
  }
  expect(checked, "some rows were checked").toBeGreaterThan(0);
}
