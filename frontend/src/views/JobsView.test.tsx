import { render, screen, within } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Job, JobPage } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { job as factoryJob } from "../test/factories";
import { FailedTable } from "./FailedJobsView";
import { JobListBody, JobTable, type ListPlace } from "./JobsView";
import type { Loaded } from "./types";

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

describe("the merged list of every shard", () => {
  const place = (setCursor: (c: string | undefined) => void, cursor?: string): ListPlace => ({
    values: {},
    setValues: () => {},
    page: 1,
    pageSize: 25,
    setPage: () => {},
    setPageSize: () => {},
    cursor,
    setCursor,
  });
  const loaded = (data: JobPage) => ({ data, isPending: false, isError: false, error: null }) as Loaded<JobPage>;

  it("pages by the cursor of its next, not by page number", async () => {
    const setCursor = vi.fn();
    const page: JobPage = {
      count: 60,
      next: "http://testserver/api/v1/jobs/?cursor=abc",
      previous: null,
      results: rows,
      shards: [
        { alias: "default", number: 0, up: true, error: null, count: 40 },
        { alias: "shard_b", number: 1, up: true, error: null, count: 20 },
      ],
    };
    render(
      <MemoryRouter>
        <JobListBody jobs={loaded(page)} place={place(setCursor)} refused={null} pastEnd={false} empty="none">
          {(shown) => <span>{shown.length} rows</span>}
        </JobListBody>
      </MemoryRouter>,
    );
    expect(screen.getByText("3 shown of 60, every shard merged")).toBeInTheDocument();
    expect(screen.queryByText(/Page 1 of/)).toBeNull();
    await userEvent.click(screen.getByRole("button", { name: "Next →" }));
    expect(setCursor).toHaveBeenCalledWith("abc");
  });

  it("keeps the page number pager for one database's list", () => {
    const page: JobPage = { count: 3, next: null, previous: null, results: rows };
    render(
      <MemoryRouter>
        <JobListBody jobs={loaded(page)} place={place(() => {})} refused={null} pastEnd={false} empty="none">
          {(shown) => <span>{shown.length} rows</span>}
        </JobListBody>
      </MemoryRouter>,
    );
    expect(screen.getByText("Page 1 of 1")).toBeInTheDocument();
  });
});
