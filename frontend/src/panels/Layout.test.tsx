import { screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { CONFIG_ELEMENT_ID, resetRuntimeConfig } from "../config";
import { queue, user } from "../test/factories";
import { renderWithClient } from "../test/render";

const staff = user({ is_staff: true });

function renderMounted(config: object, at: string) {
  const el = document.createElement("script");
  el.type = "application/json";
  el.id = CONFIG_ELEMENT_ID;
  el.textContent = JSON.stringify(config);
  document.head.append(el);
  resetRuntimeConfig();
  const requested: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string) => {
      requested.push(url);
      if (url.endsWith("auth/me/")) return new Response(JSON.stringify(staff), { status: 200 });
      if (url.endsWith("/queues/")) return new Response(JSON.stringify([queue("emails")]), { status: 200 });
      return new Response(JSON.stringify({ detail: "Not found." }), { status: 404 });
    }),
  );
  renderWithClient(<App />, { basename: "/ops/queue/", at });
  return requested;
}

afterEach(() => {
  document.getElementById(CONFIG_ELEMENT_ID)?.remove();
  resetRuntimeConfig();
  vi.unstubAllGlobals();
});

describe("the dashboard mounted under a prefix", () => {
  it("links its pages under the prefix and asks the API at the injected base", async () => {
    const requested = renderMounted(
      { basename: "/ops/queue/", apiBase: "/ops/queue-api/v1/", apiDocsUrl: "/ops/queue-api/docs/", adminUrl: null },
      "/ops/queue/no-such-page",
    );
    expect(await screen.findByText(/not a page of the dashboard/)).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Jobs" })).toHaveAttribute("href", "/ops/queue/jobs");
    expect(screen.getByRole("link", { name: "Overview" })).toHaveAttribute("href", "/ops/queue/");
    expect(screen.getByRole("link", { name: "Queues" })).toHaveAttribute("href", "/ops/queue/queues");
    expect(await screen.findByRole("link", { name: "emails" })).toHaveAttribute("href", "/ops/queue/queues/emails");
    expect(screen.getByRole("link", { name: "API docs" })).toHaveAttribute("href", "/ops/queue-api/docs/");
    // A staff user, but the host has no admin mounted: no dead link.
    expect(screen.queryByRole("link", { name: "Admin" })).toBeNull();
    expect(requested.length).toBeGreaterThan(0);
    expect(requested.every((u) => u.startsWith("/ops/queue-api/v1/"))).toBe(true);
  });

  it("links the admin where the host mounted it", async () => {
    renderMounted({ basename: "/ops/queue/", apiBase: "/ops/queue-api/v1/", adminUrl: "/backoffice/" }, "/ops/queue/x");
    expect(await screen.findByRole("link", { name: "Admin" })).toHaveAttribute("href", "/backoffice/");
  });
});
