import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter } from "react-router";
import { describe, expect, it, vi } from "vitest";
import type { Queue } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { loaded, queue as q } from "../test/factories";
import { QueuesPanel, sortQueues } from "./QueuesPanel";

function renderPanel(queues: Queue[], { canChange = true } = {}) {
  const toggle = { mutate: vi.fn(), isPending: false, variables: undefined, error: null };
  render(
    <MemoryRouter>
      <QueuesPanel queues={loaded(queues)} toggle={canChange ? toggle : null} maxDepth={null} />
    </MemoryRouter>,
  );
  return toggle;
}

describe("QueuesPanel", () => {
  it("keeps every queue's row, idle ones too, by name, each linked to its page", () => {
    renderPanel([
      q("idle-1"),
      q("emails", { queued: 5, runnable: 3, running: 1 }),
      q("reports", { paused: true }),
      q("idle-2"),
    ]);
    const table = screen.getByTestId("queues-table");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.dataset.queue)).toEqual(["emails", "idle-1", "idle-2", "reports"]);
    expect(rows.map((r) => r.dataset.idle ?? "")).toEqual(["", "true", "true", ""]);
    expect(within(table).getByText("+2 later")).toBeInTheDocument();
    expect(within(table).getByRole("link", { name: "emails" })).toHaveAttribute("href", "/queues/emails");
    expect(screen.queryByRole("button", { name: /idle queue/ })).toBeNull();
    expectCardLabels(table);
  });

  it("asks its route to pause a queue, and offers nothing to a user who may not", async () => {
    const toggle = renderPanel([q("emails", { queued: 1, runnable: 1 })]);
    await userEvent.click(screen.getByRole("button", { name: "Pause queue emails" }));
    expect(toggle.mutate).toHaveBeenCalledWith({ name: "emails", action: "pause" });
    renderPanel([q("reports")], { canChange: false });
    expect(screen.queryByRole("button", { name: "Pause queue reports" })).toBeNull();
  });
});

describe("sortQueues", () => {
  it("orders by name, whatever the load, so rows do not jump", () => {
    expect(sortQueues([q("b"), q("a"), q("c", { running: 2 }), q("d", { queued: 1 })]).map((x) => x.name)).toEqual([
      "a",
      "b",
      "c",
      "d",
    ]);
  });

  it("does not call a paused queue's due jobs runnable: they are held", () => {
    renderPanel([q("reports", { paused: true, queued: 40, runnable: 40 })]);
    const cell = screen.getByTestId("queue-runnable");
    expect(cell).toHaveTextContent("0 40 held");
    expect(cell).not.toHaveTextContent("40 runnable");
  });
});
