/**
 * Rendering a page or a component as the dashboard does: inside a query client (no retries, so
 * a refused request shows at once) and a router, and, given a user, under the layout's outlet
 * that hands pages the logged-in user (lib/useUser.ts).
 */
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { type InitialEntry, MemoryRouter, Outlet, Route, Routes } from "react-router";
import type { User } from "../api/types";

/** A fresh client a test owns: no retries, nothing shared with another test. */
export function testQueryClient(): QueryClient {
  return new QueryClient({ defaultOptions: { queries: { retry: false } } });
}

export type RenderOptions = {
  /** Where the router starts (a path, or a location with its state). */
  at?: InitialEntry;
  /** The route `ui` answers (`/jobs/:id`); with `user` or `routes` and no path, any path. */
  path?: string;
  /** Other routes beside `ui`'s, by path (where an action leads, say). */
  routes?: Record<string, ReactNode>;
  /** The logged-in user: pages get it from the outlet, and the session query knows it. */
  user?: User;
  /** What renders beside the routes, inside the router (a probe of the address). */
  beside?: ReactNode;
  basename?: string;
  client?: QueryClient;
};

export function renderWithClient(ui: ReactNode, options: RenderOptions = {}) {
  const { at = "/", path, routes, user, beside, basename, client = testQueryClient() } = options;
  if (user) client.setQueryData(["auth", "me"], user);
  const routed = path !== undefined || routes !== undefined || user !== undefined;
  const result = render(
    <QueryClientProvider client={client}>
      <MemoryRouter basename={basename} initialEntries={[at]}>
        {routed ? (
          <Routes>
            <Route element={<Outlet context={user} />}>
              <Route path={path ?? "*"} element={ui} />
              {Object.entries(routes ?? {}).map(([p, element]) => (
                <Route key={p} path={p} element={element} />
              ))}
            </Route>
          </Routes>
        ) : (
          ui
        )}
        {beside}
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return { ...result, client };
}
