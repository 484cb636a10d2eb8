import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ConcurrencyKey } from "./ConcurrencyKey";

const keyed = {
  status: "queued" as const,
  concurrency_key: "customer:42",
  concurrency_key_limit: 1,
  concurrency_key_running: 1,
  concurrency_key_wait: "waiting: 1 of 1 running for key customer:42",
};

describe("ConcurrencyKey", () => {
  it("says why a queued job waits for its key", () => {
    render(<ConcurrencyKey job={keyed} />);
    const el = screen.getByTestId("concurrency-key");
    expect(el).toHaveTextContent("waiting: 1 of 1 running for key customer:42");
    expect(el).toHaveTextContent("at most 1 at once · 1 running now");
    expect(el).toHaveClass("warn");
  });

  it("shows the key of a job that does not wait, without a warning", () => {
    render(<ConcurrencyKey job={{ ...keyed, status: "running", concurrency_key_wait: "" }} />);
    const el = screen.getByTestId("concurrency-key");
    expect(el).toHaveTextContent("Concurrency key customer:42");
    expect(el).not.toHaveClass("warn");
  });

  it("shows nothing for a job without a key", () => {
    render(
      <ConcurrencyKey
        job={{
          ...keyed,
          concurrency_key: null,
          concurrency_key_limit: null,
          concurrency_key_running: null,
          concurrency_key_wait: "",
        }}
      />,
    );
    expect(screen.queryByTestId("concurrency-key")).toBeNull();
  });
});
