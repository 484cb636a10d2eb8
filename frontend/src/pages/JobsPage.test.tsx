import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "../api/client";
import { filterProblems, fromStatusChoice, statusChoice } from "../components/JobFilters";
import { queue, user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { FailedJobsPage } from "./FailedJobsPage";
import { JobsPage } from "./JobsPage";

const EMPTY = { count: 0, next: null, previous: null, results: [] };

/** The API as it answers the list: a 400 naming each bad filter, as django-filter does. */
function fakeApi(requested: URL[]) {
  return vi.fn(async (input: string) => {
    const url = new URL(input, "http://test");
    requested.push(url);
    if (url.pathname.endsWith("/job-types/")) return new Response('[{"name":"noop"}]', { status: 200 });
    if (url.pathname.endsWith("/queues/")) {
      return new Response(JSON.stringify([queue("emails"), queue("reports")]), { status: 200 });
    }
    if (url.pathname.endsWith("/jobs/suggestions/")) {
      const field = url.searchParams.get("field")!;
      const prefix = url.searchParams.get("prefix") ?? "";
      const kept: Record<string, string[]> = {
        type: ["noop", "retired_type"],
        concurrency_key: ["customer:1", "customer:2", "tenant-7"],
      };
      const values = (kept[field] ?? []).filter((v) => v.startsWith(prefix));
      return new Response(JSON.stringify({ field, prefix, values }), { status: 200 });
    }
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
    const payload = url.searchParams.get("payload");
    if (payload !== null && !payload.includes(":")) {
      errors.payload = [`must be path:value, such as customer_id:42; got '${payload}'`];
    }
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
  renderWithClient(page, { user: user(), at: path, routes: { "/jobs": page, "/failed": page }, beside: <Where /> });
  return requested;
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
    expect(select.value).toBe("status:bogus");
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

describe("the status filter", () => {
  it("is one select: a status, or under queued what the job waits for; a choice sets one and clears the other", async () => {
    const requested = renderAt("/jobs?state=available&queue=emails");
    const select = (await screen.findByLabelText("Status")) as HTMLSelectElement;
    expect(screen.queryByRole("group", { name: "State" })).toBeNull();
    expect(within(select).getByRole("option", { selected: true })).toHaveTextContent("queued · ready now");
    expect(
      within(select)
        .getAllByRole("option")
        .map((o) => o.textContent),
    ).toEqual([
      "Any",
      "waiting (on dependencies)",
      "queued",
      "queued · ready now",
      "queued · scheduled for later",
      "queued · retrying after a back-off",
      "running",
      "succeeded",
      "failed",
      "cancelled",
    ]);
    await userEvent.selectOptions(select, "failed");
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?status=failed&queue=emails$/));
    await userEvent.selectOptions(select, "queued · retrying after a back-off");
    await waitFor(() =>
      expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?state=retryable&queue=emails$/),
    );
    await waitFor(() => {
      const last = requested.filter((u) => u.pathname.endsWith("/jobs/")).at(-1)!;
      expect([last.searchParams.get("state"), last.searchParams.get("status")]).toEqual(["retryable", null]);
    });
    await userEvent.selectOptions(select, "Any");
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs\?queue=emails$/));
  });

  it("shows several states from the address as asked, and asks the list for any of them", async () => {
    const requested = renderAt("/jobs?state=scheduled,failed");
    const select = (await screen.findByLabelText("Status")) as HTMLSelectElement;
    expect(within(select).getByRole("option", { selected: true })).toHaveTextContent("scheduled, failed");
    await waitFor(() => expect(requested.some((u) => u.searchParams.get("state") === "scheduled,failed")).toBe(true));
  });

  it("is not offered on the failed jobs page, whose status is pinned", async () => {
    renderAt("/failed", <FailedJobsPage />);
    await screen.findByLabelText("Priority");
    expect(screen.queryByLabelText("Status")).toBeNull();
  });

  it("reads and writes the address's status and state", () => {
    expect(statusChoice({ status: "failed" })).toBe("status:failed");
    expect(statusChoice({ state: "available,retryable" })).toBe("state:available,retryable");
    expect(statusChoice({})).toBe("");
    expect(fromStatusChoice("state:scheduled")).toEqual({ status: undefined, state: "scheduled" });
    expect(fromStatusChoice("status:queued")).toEqual({ status: "queued", state: undefined });
    expect(fromStatusChoice("")).toEqual({ status: undefined, state: undefined });
  });
});

describe("the queue filter", () => {
  it("offers every queue to choose from, as the queues endpoint lists them", async () => {
    renderAt("/jobs");
    const field = await screen.findByLabelText("Queue");
    expect(field).toHaveAttribute("list", "f-queue-list");
    await waitFor(() =>
      expect([...screen.getByTestId("queue-choices").querySelectorAll("option")].map((o) => o.value)).toEqual([
        "emails",
        "reports",
      ]),
    );
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

describe("the concurrency key's suggestions", () => {
  it("offers the keys starting with what is typed, asked once typing pauses, not per keystroke", async () => {
    const requested = renderAt("/jobs");
    await userEvent.type(await screen.findByLabelText("Concurrency key"), "cust");
    const choices = () =>
      [...screen.getByTestId("concurrency-key-choices").querySelectorAll("option")].map((o) => o.value);
    await waitFor(() => expect(choices()).toEqual(["customer:1", "customer:2"]));
    expect(screen.getByLabelText("Concurrency key")).toHaveAttribute("list", "f-concurrency-key-list");
    const asked = requested
      .filter((u) => u.pathname.endsWith("/jobs/suggestions/") && u.searchParams.get("field") === "concurrency_key")
      .map((u) => u.searchParams.get("prefix"));
    expect(asked).toEqual(["cust"]);
  });

  it("asks for none before the key field is used", async () => {
    const requested = renderAt("/jobs");
    await screen.findByText("No jobs match");
    expect(requested.some((u) => u.searchParams.get("field") === "concurrency_key")).toBe(false);
  });
});

describe("the type filter", () => {
  it("offers the registered types and those the jobs kept still carry", async () => {
    renderAt("/jobs");
    const select = await screen.findByLabelText("Type");
    await waitFor(() =>
      expect([...select.querySelectorAll("option")].map((o) => o.value)).toEqual(["", "noop", "retired_type"]),
    );
  });
});

describe("the payload filter", () => {
  it("asks the list for the jobs whose payload holds path:value, once applied, and keeps it in the address", async () => {
    const requested = renderAt("/jobs");
    await userEvent.type(await screen.findByLabelText("Payload"), "customer_id:42");
    await userEvent.click(screen.getByRole("button", { name: "Apply" }));
    await waitFor(() =>
      expect(new URL(screen.getByTestId("where").textContent!, "http://test").searchParams.get("payload")).toBe(
        "customer_id:42",
      ),
    );
    await waitFor(() =>
      expect(
        requested
          .filter((u) => u.pathname.endsWith("/jobs/"))
          .at(-1)!
          .searchParams.get("payload"),
      ).toBe("customer_id:42"),
    );
  });

  it("shows the API's refusal of a term it cannot read, named, with a way to clear it", async () => {
    renderAt("/jobs?payload=customer_id");
    const problem = await screen.findByTestId("filter-problem");
    expect(problem).toHaveTextContent("Payload “customer_id”: must be path:value");
    expect(screen.getByLabelText("Payload")).toHaveAttribute("aria-invalid", "true");
    await userEvent.click(within(problem).getByRole("button", { name: "Clear payload" }));
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs$/));
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
