import { render, screen } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import type { JobType } from "../api/types";
import { CreateJobView } from "./CreateJobView";

const loaded = (data: JobType[]) => ({
  data,
  isPending: false,
  isError: false,
  error: null,
  isFetching: false,
  refetch: () => {},
});
const type = (name: string, creatable: boolean): JobType =>
  ({
    name,
    description: "",
    queue: "default",
    priority: 0,
    max_attempts: 3,
    timeout_seconds: 300,
    payload_example: {},
    creatable,
  }) as JobType;
const create = { mutate: () => {}, isPending: false, error: null };

describe("the create-job page", () => {
  it("says in full which settings open it when no type may be created", () => {
    render(
      <MemoryRouter>
        <CreateJobView canCreate types={loaded([type("noop", false)])} create={create} />
      </MemoryRouter>,
    );
    const notice = screen.getByTestId("nothing-creatable");
    expect(notice).toHaveTextContent("No job type may be created here.");
    expect(notice).toHaveTextContent("JOB_API_CREATABLE_TYPES");
    expect(notice).toHaveTextContent("JOB_API_CREATABLE_TASKS");
    expect(screen.queryByRole("combobox")).not.toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Create job" })).not.toBeInTheDocument();
  });

  it("offers the creatable types only", () => {
    render(
      <MemoryRouter>
        <CreateJobView canCreate types={loaded([type("noop", true), type("secret", false)])} create={create} />
      </MemoryRouter>,
    );
    const select = screen.getByLabelText("Type");
    expect([...select.querySelectorAll("option")].map((o) => o.value)).toEqual(["noop"]);
    expect(screen.queryByTestId("nothing-creatable")).not.toBeInTheDocument();
  });
});
