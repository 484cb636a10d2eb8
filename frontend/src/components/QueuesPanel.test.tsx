import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter } from "react-router";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Queue } from "../api/types";
import { QueuesPanel, sortQueues } from "./QueuesPanel";
import { expectCardLabels } from "../test/cards";

const q = (name: string, extra: Partial<Queue> = {}): Queue => ({
  name,
  paused: false,
  concurrency_limit: null,
  queued: 0,
  runnable: 0,
  running: 0,
  ...extra,
});

function renderPanel(initial: Queue[]) {
  let queues = initial;
  document.cookie = "csrftoken=t; path=/";
  const posted: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit) => {
      if (init.method === "POST") {
        posted.push(url);
        const name = decodeURIComponent(url.split("/")[4]);
        queues = queues.map((x) => (x.name === name ? { ...x, paused: url.endsWith("/pause/") } : x));
        return new Response(JSON.stringify(queues.find((x) => x.name === name)), { status: 200 });
      }
      return new Response(JSON.stringify(queues), { status: 200 });
    }),
  );
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={client}>
      <MemoryRouter>
        <QueuesPanel canChange maxDepth={null} />
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return posted;
}

afterEach(() => vi.unstubAllGlobals());

describe("QueuesPanel", () => {
  it("keeps every queue's row, idle ones too, by name, each linked to its page", async () => {
    renderPanel([
      q("idle-1"),
      q("emails", { queued: 5, runnable: 3, running: 1 }),
      q("reports", { paused: true }),
      q("idle-2"),
    ]);
    const table = await screen.findByTestId("queues-table");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.dataset.queue)).toEqual(["emails", "idle-1", "idle-2", "reports"]);
    expect(rows.map((r) => r.dataset.idle ?? "")).toEqual(["", "true", "true", ""]);
    expect(within(table).getByText("+2 later")).toBeInTheDocument();
    expect(within(table).getByRole("link", { name: "emails" })).toHaveAttribute("href", "/queues/emails");
    expect(screen.queryByRole("button", { name: /idle queue/ })).toBeNull();
    expectCardLabels(table);
  });

  it("pauses a queue and shows it paused", async () => {
    const user = userEvent.setup();
    const posted = renderPanel([q("emails", { queued: 1, runnable: 1 })]);
    await user.click(await screen.findByRole("button", { name: "Pause queue emails" }));
    expect(await screen.findByText("paused")).toBeInTheDocument();
    expect(posted).toEqual(["/api/v1/queues/emails/pause/"]);
    expect(screen.getByRole("button", { name: "Resume queue emails" })).toBeInTheDocument();
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

  it("does not call a paused queue's due jobs runnable: they are held", async () => {
    renderPanel([q("reports", { paused: true, queued: 40, runnable: 40 })]);
    const cell = await screen.findByTestId("queue-runnable");
    expect(cell).toHaveTextContent("0 40 held");
    expect(cell).not.toHaveTextContent("40 runnable");
  });
});
