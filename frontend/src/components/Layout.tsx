import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { NavLink, Outlet, useNavigate } from "react-router";
import { authMutations } from "../api/auth";
import { metricsOptions } from "../api/metrics";
import type { User } from "../api/types";
import { runtimeConfig } from "../config";
import { useRememberWhereFrom } from "../lib/cameFrom";
import { RefreshControl, ThemeControl } from "./Controls";

export function Layout({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  useRememberWhereFrom();
  // Shared with the Overview (same key): the Failed count in the nav stays current.
  const metrics = useQuery({ ...metricsOptions(5000), retry: false });
  const { apiDocsUrl, adminUrl } = runtimeConfig();
  const failed = metrics.data?.counts_by_status.failed ?? 0;
  const logout = useMutation({
    ...authMutations.logout(queryClient),
    onSettled: () => {
      authMutations.logout(queryClient).onSettled();
      navigate("/login", { replace: true });
    },
  });
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className="sidebar" aria-label="Main navigation">
        <div className="brand">
          <span className="brand-mark" aria-hidden="true">
            Q
          </span>
          <span className="brand-name">Job queue</span>
        </div>
        <nav className="nav">
          <NavLink to="/" end>
            Overview
          </NavLink>
          <NavLink to="/jobs" end>
            Jobs
          </NavLink>
          <NavLink to="/failed">
            Failed jobs
            {failed > 0 && (
              <span className="count" aria-label={`${failed} failed`}>
                {failed}
              </span>
            )}
          </NavLink>
          <NavLink to="/schedules">Periodic jobs</NavLink>
          {user.can.create && <NavLink to="/jobs/new">Create job</NavLink>}
        </nav>
        <div className="sidebar-controls">
          <RefreshControl />
          <ThemeControl />
        </div>
        <div className="sidebar-foot">
          <span className="who">
            Signed in as <strong>{user.username}</strong>
          </span>
          {apiDocsUrl && <a href={apiDocsUrl}>API docs</a>}
          {user.is_staff && adminUrl && <a href={adminUrl}>Admin</a>}
          <button type="button" className="link" onClick={() => logout.mutate()} disabled={logout.isPending}>
            Log out
          </button>
        </div>
      </aside>
      <main className="main" id="main" tabIndex={-1}>
        <Outlet context={user} />
      </main>
    </div>
  );
}
