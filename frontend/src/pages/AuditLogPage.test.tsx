import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AuditLogEntry } from "../api/types";
import { expectCardLabels } from "../test/cards";
import { user } from "../test/factories";
import { renderWithClient } from "../test/render";
import { AuditLogPage } from "./AuditLogPage";

function entry(id: number, extra: Partial<AuditLogEntry> = {}): AuditLogEntry {
  return {
    id,
    at: "2026-01-01T00:00:00Z",
    actor: "alice",
    action: "cancel",
    target_kind: "job",
    target: "42",
    data: { status: "queued" },
    ...extra,
  };
}

/** GET audit/: every request's address, and one page of entries. */
function fakeAuditApi(results: AuditLogEntry[], count = results.length) {
  const asked: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string) => {
      asked.push(url);
      return new Response(JSON.stringify({ count, next: null, previous: null, results }), { status: 200 });
    }),
  );
  return asked;
}

afterEach(() => vi.unstubAllGlobals());

describe("the audit log page", () => {
  it("says who did what to which job, queue or schedule, and what changed", async () => {
    fakeAuditApi([
      entry(3, {
        action: "set_queue_limit",
        target_kind: "queue",
        target: "media",
        data: { concurrency_limit: [null, 3] },
      }),
      entry(2, { actor: "", action: "pause_schedule", target_kind: "schedule", target: "nightly", data: {} }),
      entry(1, { action: "rerun", data: { copy: 43 } }),
      entry(0, { action: "delete", data: { events: 4 } }),
    ]);
    renderWithClient(<AuditLogPage />, { user: user(), at: "/audit", path: "/audit" });
    expect(screen.getByRole("heading", { name: "Audit log", level: 1 })).toBeInTheDocument();
    const table = await screen.findByTestId("audit-table");
    const row = (id: number) => table.querySelector<HTMLElement>(`tr[data-entry="${id}"]`)!;
    expect(row(3)).toHaveTextContent("alice");
    expect(row(3)).toHaveTextContent("Set queue limit");
    expect(row(3)).toHaveTextContent("limit: none → 3");
    expect(within(row(3)).getByRole("link", { name: "queue media" })).toHaveAttribute("href", "/queues/media");
    expect(row(2)).toHaveTextContent("(code)");
    expect(within(row(2)).getByRole("link", { name: "schedule nightly" })).toHaveAttribute("href", "/schedules");
    expect(within(row(1)).getByRole("link", { name: "job #42" })).toHaveAttribute("href", "/jobs/42");
    expect(within(row(1)).getByRole("link", { name: "copy #43" })).toHaveAttribute("href", "/jobs/43");
    // A deleted job has no page to link to.
    expect(within(row(0)).queryByRole("link")).toBeNull();
    expect(row(0)).toHaveTextContent("with its 4 events");
    expectCardLabels(table);
  });

  it("names rate limits by their scope and links a cancelled batch to its page", async () => {
    fakeAuditApi([
      entry(5, {
        action: "set_rate_limit",
        target_kind: "rate_limit",
        target: "type:email_send",
        data: { max_starts: [null, 20], period_seconds: [null, 1] },
      }),
      entry(4, { action: "cancel_batch", target_kind: "batch", target: "7", data: { cancelled: 3 } }),
    ]);
    renderWithClient(<AuditLogPage />, { user: user(), at: "/audit", path: "/audit" });
    const table = await screen.findByTestId("audit-table");
    const row = (id: number) => table.querySelector<HTMLElement>(`tr[data-entry="${id}"]`)!;
    expect(row(5)).toHaveTextContent("Set rate limit");
    expect(row(5)).toHaveTextContent("rate limit type:email_send");
    expect(row(5)).toHaveTextContent("starts: none → 20");
    expect(row(4)).toHaveTextContent("Cancelled batch");
    expect(within(row(4)).getByRole("link", { name: "batch #7" })).toHaveAttribute("href", "/batches/7");
  });

  it("filters by who, action and target through the address", async () => {
    const asked = fakeAuditApi([entry(1)]);
    renderWithClient(<AuditLogPage />, { user: user(), at: "/audit?action=cancel", path: "/audit" });
    await screen.findByTestId("audit-table");
    expect(asked.at(-1)).toContain("action=cancel");
    await userEvent.type(screen.getByLabelText("Who"), "alice");
    await userEvent.type(screen.getByLabelText("Job id or name"), "42");
    await userEvent.click(screen.getByRole("button", { name: "Apply" }));
    await vi.waitFor(() => expect(asked.at(-1)).toMatch(/actor=alice.*target=42|target=42.*actor=alice/));
    expect(asked.at(-1)).toContain("action=cancel");
    await userEvent.selectOptions(screen.getByLabelText("On"), "queue");
    await vi.waitFor(() => expect(asked.at(-1)).toContain("target_kind=queue"));
    await userEvent.click(screen.getByRole("button", { name: "Clear filters" }));
    await vi.waitFor(() => expect(asked.at(-1)).not.toContain("actor="));
  });

  it("says when nothing was recorded, and pages through many entries", async () => {
    fakeAuditApi([], 0);
    const { unmount } = renderWithClient(<AuditLogPage />, { user: user(), at: "/audit", path: "/audit" });
    expect(await screen.findByText("No actions recorded")).toBeInTheDocument();
    unmount();
    const asked = fakeAuditApi([entry(1)], 60);
    renderWithClient(<AuditLogPage />, { user: user(), at: "/audit", path: "/audit" });
    await screen.findByTestId("audit-table");
    await userEvent.click(screen.getByRole("button", { name: "Next →" }));
    await vi.waitFor(() => expect(asked.at(-1)).toContain("page=2"));
  });
});
