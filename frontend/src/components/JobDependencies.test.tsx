import { render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import { JobDependencies } from "./JobDependencies";

const link = (
  id: number,
  status: "queued" | "succeeded" | "failed" | "cancelled" | "waiting" | null,
  on_failure: "cancel" | "run" = "cancel",
) => ({
  id,
  type: status === null ? null : "noop",
  status,
  on_failure,
});

describe("JobDependencies", () => {
  it("renders nothing for a job without dependencies or dependants", () => {
    const { container } = render(<JobDependencies dependencies={[]} dependants={[]} />, { wrapper: MemoryRouter });
    expect(container).toBeEmptyDOMElement();
  });

  it("lists what the job waits for, how many are still open, and what waits for it", () => {
    render(
      <JobDependencies
        dependencies={[link(1, "succeeded"), link(2, "queued"), link(3, null, "run")]}
        dependants={[link(9, "waiting")]}
      />,
      { wrapper: MemoryRouter },
    );
    const waitsFor = screen.getByRole("list", { name: "Waits for" });
    expect(within(waitsFor).getAllByRole("listitem")).toHaveLength(3);
    expect(within(waitsFor).getByRole("link", { name: "#2" })).toHaveAttribute("href", "/jobs/2");
    expect(screen.getByText(/Waits for \(3, 1 pruned, 1 not finished yet\)/)).toBeInTheDocument();
    expect(within(waitsFor).getByText("(pruned)")).toBeInTheDocument();
    expect(within(waitsFor).getByText(/runs even if it fails/)).toBeInTheDocument();
    const waitedBy = screen.getByRole("list", { name: "Waited for by" });
    expect(within(waitedBy).getByRole("link", { name: "#9" })).toHaveAttribute("href", "/jobs/9");
  });

  it("says a dependency failed or was cancelled for good, not that it has not succeeded yet", () => {
    render(<JobDependencies dependencies={[link(1, "failed"), link(2, "cancelled")]} dependants={[]} />, {
      wrapper: MemoryRouter,
    });
    expect(screen.getByText("Waits for (2, 1 failed, 1 cancelled)")).toBeInTheDocument();
    expect(screen.queryByText(/not succeeded yet|not finished yet/)).toBeNull();
  });
});
