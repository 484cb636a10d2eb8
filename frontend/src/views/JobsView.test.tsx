import { render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import type { Job } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { job as factoryJob } from "../test/factories";
import { FailedTable } from "./FailedJobsView";
import { JobTable } from "./JobsView";

const job = (id: number, extra: Partial<Job>) =>
  factoryJob(id, {
    type: "report_generate",
    created_at: "2026-12-01T09:00:00Z",
    available_at: "2026-12-01T09:00:00Z",
    ...extra,
  });

const rows = [
  job(1, { status: "running", attempts: 1, locked_by: "vm-1-42-0", lease_expires_at: "2099-01-01T00:00:00Z" }),
  job(2, { status: "failed", attempts: 3, last_error: "RuntimeError: card declined: insufficient funds" }),
  job(3, {}),
];
const selection = {
  selected: new Set<number>(),
  setSelected: () => {},
  allMatching: false,
  setAllMatching: () => {},
  allSelected: false,
  isSelected: () => false,
  toggle: () => {},
  toggleAll: () => {},
};

describe("the job tables on a phone", () => {
  it("label every folded cell of the jobs list with its column's header", () => {
    render(
      <MemoryRouter>
        <JobTable jobs={rows} selection={selection} />
      </MemoryRouter>,
    );
    const table = screen.getByTestId("jobs-table");
    expectCardLabels(table);
    // A job with no lease and no error leaves those cells out of its card.
    const idle = table.querySelector<HTMLElement>('tr[data-job-id="3"]')!;
    expect(within(idle).getByTestId("last-error-3")).toHaveClass("card-empty");
    expect(idle.querySelector('[data-label="Lease owner"]')).toHaveClass("card-empty");
    const failed = table.querySelector<HTMLElement>('tr[data-job-id="2"]')!;
    expect(within(failed).getByTestId("last-error-2")).not.toHaveClass("card-empty");
    expect(within(failed).getByTestId("last-error-2")).toHaveClass("card-wide");
  });

  it("label every folded cell of the failed jobs with its column's header", () => {
    render(
      <MemoryRouter>
        <FailedTable rows={[rows[1]]} selection={selection} canRetry retrying={undefined} onRetry={() => {}} />
      </MemoryRouter>,
    );
    expectCardLabels(screen.getByTestId("failed-table"));
  });
});
