import { render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import { JobWorkflow, MAX_COLUMN_NODES, layout } from "./JobWorkflow";

type Status = "queued" | "succeeded" | "failed" | "cancelled" | "waiting" | "running" | null;
const link = (id: number, status: Status) => ({
  id,
  type: status === null ? null : "step",
  status,
  on_failure: "cancel" as const,
});
const centre = { id: 5, type: "report", status: "waiting" as const, batch: null as number | null };

describe("JobWorkflow", () => {
  it("renders nothing for a job without dependencies, dependants or batch", () => {
    const { container } = render(<JobWorkflow job={{ ...centre, dependencies: [], dependants: [] }} />, {
      wrapper: MemoryRouter,
    });
    expect(container).toBeEmptyDOMElement();
  });

  it("draws dependencies left, the job centre, dependants right, each linking to its job with its state", () => {
    render(
      <JobWorkflow
        job={{
          ...centre,
          batch: 7,
          dependencies: [link(1, "succeeded"), link(2, "failed")],
          dependants: [link(9, null)],
        }}
      />,
      { wrapper: MemoryRouter },
    );
    const graph = screen.getByTestId("workflow-graph");
    expect(within(graph).getByRole("link", { name: "#1 step, succeeded" })).toHaveAttribute("href", "/jobs/1");
    expect(within(graph).getByRole("link", { name: "#2 step, failed" })).toHaveAttribute("href", "/jobs/2");
    expect(within(graph).getByRole("link", { name: "#9 (pruned), pruned" })).toHaveAttribute("href", "/jobs/9");
    expect(within(graph).getByRole("link", { name: "Batch #7" })).toHaveAttribute("href", "/batches/7");
    // The job itself is the centre, not a link to the page it is on.
    expect(screen.getByTestId("workflow-node-5")).toHaveAttribute("data-status", "waiting");
    expect(within(graph).queryByRole("link", { name: /^#5 / })).toBeNull();
    expect(graph.querySelectorAll("path[marker-end]")).toHaveLength(3);
  });

  it("lays the columns out left to right and counts what does not fit", () => {
    const many = Array.from({ length: MAX_COLUMN_NODES + 3 }, (_, i) => link(100 + i, "queued"));
    const g = layout(centre, [link(1, "succeeded")], many);
    expect(g.left[0].x).toBeLessThan(g.centre.x);
    expect(g.centre.x).toBeLessThan(g.right[0].x);
    expect(g.right).toHaveLength(MAX_COLUMN_NODES);
    expect(g.hiddenRight).toBe(3);
    expect(g.hiddenLeft).toBe(0);
    render(<JobWorkflow job={{ ...centre, dependencies: [], dependants: many }} />, { wrapper: MemoryRouter });
    expect(screen.getByText("+ 3 more")).toBeInTheDocument();
  });
});
