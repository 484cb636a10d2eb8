import { render, screen, within } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import { ConcurrencyKey } from "./ConcurrencyKey";

const keyed = {
  id: 50,
  status: "queued" as const,
  concurrency_key: "customer:42",
  concurrency_key_limit: 1,
  concurrency_key_running: 1,
  concurrency_key_wait: "waiting: 1 of 1 running for key customer:42",
  concurrency_key_holders: [41],
};

const inRouter = (node: ReactNode) => render(<MemoryRouter>{node}</MemoryRouter>);

describe("ConcurrencyKey", () => {
  it("says a queued job waits for its key, naming and linking the job that holds it, each figure once", () => {
    inRouter(<ConcurrencyKey job={keyed} />);
    const el = screen.getByTestId("concurrency-key");
    expect(el).toHaveTextContent(
      "Waiting for concurrency key customer:42 · at most 1 at once, held by #41: it runs when that job finishes",
    );
    expect(within(el).getByRole("link", { name: "#41" })).toHaveAttribute("href", "/jobs/41");
    // The count is not said twice (the API's sentence and the figures beside it).
    expect(el.textContent!.match(/1 running|1 of 1/g)).toBeNull();
    expect(el).toHaveClass("warn");
  });

  it("names the holders it knows and counts the rest", () => {
    inRouter(
      <ConcurrencyKey
        job={{
          ...keyed,
          concurrency_key_limit: 12,
          concurrency_key_running: 12,
          concurrency_key_wait: "waiting: 12 of 12 running for key customer:42",
          concurrency_key_holders: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        }}
      />,
    );
    expect(screen.getByTestId("concurrency-key")).toHaveTextContent(
      "held by #1, #2, #3, #4, #5, #6, #7, #8, #9, #10 and 2 more: it runs when one of them finishes",
    );
  });

  it("shows the key of a running job, without a warning: itself among the running ones", () => {
    inRouter(
      <ConcurrencyKey
        job={{
          ...keyed,
          id: 41,
          status: "running",
          concurrency_key_limit: 2,
          concurrency_key_running: 2,
          concurrency_key_wait: "",
          concurrency_key_holders: [40, 41],
        }}
      />,
    );
    const el = screen.getByTestId("concurrency-key");
    expect(el).toHaveTextContent("Concurrency key customer:42 · at most 2 at once · 2 running now: #40, this job");
    expect(el).not.toHaveClass("warn");
  });

  it("shows nothing for a job without a key", () => {
    inRouter(
      <ConcurrencyKey
        job={{
          ...keyed,
          concurrency_key: null,
          concurrency_key_limit: null,
          concurrency_key_running: null,
          concurrency_key_wait: "",
          concurrency_key_holders: [],
        }}
      />,
    );
    expect(screen.queryByTestId("concurrency-key")).toBeNull();
  });
});
