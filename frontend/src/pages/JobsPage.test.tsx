import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter, Outlet as RouterOutlet, Route, Routes, useLocation } from "react-router";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "../api/client";
import type { User } from "../api/types";
import { filterProblems, toggleState } from "../components/JobFilters";
import { FailedJobsPage } from "./FailedJobsPage";
import { JobsPage } from "./JobsPage";

const operator: User = {
  id: 1,
  username: "ops",
  is_staff: false,
  is_superuser: false,
  permissions: [],
  can: { view: true, create: true, cancel: true, retry: true, rerun: true, delete: true, change_queue: true },
};

const EMPTY = { count: 0, next: null, previous: null, results: [] };

/** The API as it answers the list: a 400 naming each bad filter, as django-filter does. */
function fakeApi(requested: URL[]) {
  return vi.fn(async (input: string) => {
    const url = new URL(input, "http://test");
    requested.push(url);
    if (url.pathname.endsWith("/job-types/")) return new Response("[]", { status: 200 });
    const errors: Record<string, string[]> = {};
    const status = url.searchParams.get("status");
    if (
      status &&
      status.split(",").some((s) => !["queued", "running", "succeeded", "failed", "cancelled"].includes(s))
    ) {
      errors.status = ["Select a valid choice. bogus is not one of the available choices."];
    }
    const priority = url.searchParams.get("priority");
    if (priority !== null && !/^-?\d+$/.test(priority)) errors.priority = ["Enter a whole number."];
    if (Object.keys(errors).length) {
      return new Response(JSON.stringify({ code: "invalid", detail: "invalid", errors }), { status: 400 });
    }
    return new Response(JSON.stringify(EMPTY), { status: 200 });
  });
}

function Where() {
  const location = useLocation();
  return <output data-testid="where">{location.pathname + location.search}</output>;
}

function renderAt(path: string, page = <JobsPage />) {
  const requested: URL[] = [];
  vi.stubGlobal("fetch", fakeApi(requested));
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  client.setQueryData(["auth", "me"], operator);
  render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={[path]}>
        <Routes>
          <Route element={<Outlet />}>
            <Route path="/jobs" element={page} />
            <Route path="/failed" element={page} />
          </Route>
        </Routes>
        <Where />
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return requested;
}

/** The pages read the user from the layout's outlet context. */
function Outlet() {
  return <RouterOutlet context={operator} />;
}

afterEach(() => vi.unstubAllGlobals());

describe("a bad filter in the address", () => {
  it("says which filter the API refused and why, shows the value asked for, and offers to clear it", async () => {
    const requested = renderAt("/jobs?status=bogus&queue=emails");
    const problem = await screen.findByTestId("filter-problem");
    expect(problem).toHaveTextContent("This filter is not valid");
    expect(problem).toHaveTextContent("Status “bogus”: Select a valid choice.");
    expect(screen.queryByText(/Connection problem/)).toBeNull();
    expect(screen.getByTestId("live")).toHaveTextContent("Not refreshing: the request was refused");
    const select = screen.getByLabelText("Status") as HTMLSelectElement;
    expect(select.value).toBe("bogus");
    expect(within(select).getByRole("option", { selected: true })).toHaveTextContent("bogus");
    expect(select).toHaveAttribute("aria-invalid", "true");

    await userEvent.click(within(problem).getByRole("button", { name: "Clear status" }));
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?queue=emails$/));
    expect(await screen.findByText("No jobs match")).toBeInTheDocument();
    expect(screen.queryByTestId("filter-problem")).toBeNull();
    const last = requested.filter((u) => u.pathname.endsWith("/jobs/")).at(-1)!;
    expect(last.searchParams.get("status")).toBeNull();
    expect(last.searchParams.get("queue")).toBe("emails");
  });

  it("does not ignore a priority that is not a number: the API's refusal is shown", async () => {
    renderAt("/jobs?priority=abc");
    const problem = await screen.findByTestId("filter-problem");
    expect(problem).toHaveTextContent("Priority “abc”: Enter a whole number.");
    expect(screen.getByLabelText("Priority")).toHaveValue("abc");
    await userEvent.click(within(problem).getByRole("button", { name: "Clear all filters" }));
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs$/));
  });

  it("keeps the failed-jobs page's own status when clearing", async () => {
    const requested = renderAt("/failed?priority=x", <FailedJobsPage />);
    const problem = await screen.findByTestId("filter-problem");
    await userEvent.click(within(problem).getByRole("button", { name: "Clear priority" }));
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/failed$/));
    await waitFor(() => expect(screen.queryByTestId("filter-problem")).toBeNull());
    expect(
      requested
        .filter((u) => u.pathname.endsWith("/jobs/"))
        .at(-1)!
        .searchParams.get("status"),
    ).toBe("failed");
  });
});

describe("the state filter", () => {
  it("takes several states, keeps them in the address as state=a,b and asks the list for any of them", async () => {
    const requested = renderAt("/jobs?queue=emails");
    const states = await screen.findByRole("group", { name: "State" });
    await userEvent.click(within(states).getByRole("checkbox", { name: "retryable" }));
    await waitFor(() =>
      expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?state=retryable&queue=emails$/),
    );
    await userEvent.click(within(states).getByRole("checkbox", { name: "available" }));
    // In the order of a job's life, whatever the order of the clicks: one choice, one address.
    await waitFor(() =>
      expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?state=available,retryable&queue=emails$/),
    );
    await waitFor(() =>
      expect(
        requested
          .filter((u) => u.pathname.endsWith("/jobs/"))
          .at(-1)!
          .searchParams.get("state"),
      ).toBe("available,retryable"),
    );
    expect(within(states).getByRole("checkbox", { name: "available" })).toBeChecked();
    expect(within(states).getByRole("checkbox", { name: "running" })).not.toBeChecked();

    await userEvent.click(within(states).getByRole("checkbox", { name: "available" }));
    await waitFor(() =>
      expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?state=retryable&queue=emails$/),
    );
  });

  it("reads the states from the address", async () => {
    const requested = renderAt("/jobs?state=scheduled,failed");
    const states = await screen.findByRole("group", { name: "State" });
    expect(within(states).getByRole("checkbox", { name: "scheduled" })).toBeChecked();
    expect(within(states).getByRole("checkbox", { name: "failed" })).toBeChecked();
    await waitFor(() => expect(requested.some((u) => u.searchParams.get("state") === "scheduled,failed")).toBe(true));
  });

  it("is not offered on the failed jobs page, whose status is pinned", async () => {
    renderAt("/failed", <FailedJobsPage />);
    await screen.findByLabelText("Priority");
    expect(screen.queryByRole("group", { name: "State" })).toBeNull();
  });
});

describe("the concurrency key filter", () => {
  it("asks the list for the jobs sharing the key typed, once applied, and keeps it in the address", async () => {
    const requested = renderAt("/jobs");
    await userEvent.type(await screen.findByLabelText("Concurrency key"), "customer:42");
    await userEvent.click(screen.getByRole("button", { name: "Apply" }));
    await waitFor(() =>
      expect(new URL(screen.getByTestId("where").textContent!, "http://test").searchParams.get("concurrency_key")).toBe(
        "customer:42",
      ),
    );
    await waitFor(() =>
      expect(
        requested
          .filter((u) => u.pathname.endsWith("/jobs/"))
          .at(-1)!
          .searchParams.get("concurrency_key"),
      ).toBe("customer:42"),
    );
    // Typing alone sent nothing: only the applied key was asked for.
    expect(requested.some((u) => u.searchParams.get("concurrency_key") === "customer:4")).toBe(false);
  });

  it("reads the key from the address", async () => {
    renderAt("/jobs?concurrency_key=tenant-7");
    expect(await screen.findByLabelText("Concurrency key")).toHaveValue("tenant-7");
  });
});

describe("toggleState", () => {
  it("keeps the states in the order of a job's life and keeps unknown ones for the API to refuse", () => {
    expect(toggleState([], "failed", true)).toBe("failed");
    expect(toggleState(["failed"], "available", true)).toBe("available,failed");
    expect(toggleState(["available", "failed"], "available", false)).toBe("failed");
    expect(toggleState(["bogus"], "running", true)).toBe("running,bogus");
  });
});

describe("filterProblems", () => {
  it("names each refused filter with the value it was given; null for other errors", () => {
    const error = new ApiError(400, { code: "invalid", errors: { status: ["Bad."], page_size: ["No."] } });
    expect(filterProblems(error, { status: "x" })).toEqual([
      { field: "status", label: "Status", value: "x", messages: ["Bad."] },
    ]);
    expect(filterProblems(new ApiError(503, null), {})).toBeNull();
  });
});

describe("the list's last error", () => {
  it("is red for a failed job, muted and marked earlier for a succeeded one", async () => {
    const { listedError } = await import("../views/JobsView");
    expect(listedError({ status: "failed", last_error: "boom" })).toEqual({ text: "boom", earlier: false });
    expect(listedError({ status: "queued", last_error: "boom" })).toEqual({ text: "boom", earlier: false });
    expect(listedError({ status: "succeeded", last_error: "boom" })).toEqual({
      text: "earlier attempt: boom",
      earlier: true,
    });
    expect(listedError({ status: "succeeded", last_error: null })).toBeNull();
  });
});
