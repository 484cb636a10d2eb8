import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { NavLink, Outlet, useLocation, useNavigate } from "react-router";
import { authMutations } from "../api/auth";
import { metricsOptions } from "../api/metrics";
import { queuesOptions } from "../api/queues";
import { useReadSource } from "../api/readSource";
import type { User } from "../api/types";
import { runtimeConfig } from "../config";
import { useRememberWhereFrom } from "../lib/cameFrom";
import { RefreshControl, ThemeControl } from "../components/Controls";
import { ReadSourceNote } from "../components/ReadSourceNote";
import { ToggleButton } from "../components/ToggleButton";

export function Layout({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  useRememberWhereFrom();
  // Every queue, from the navigation (the list refreshes slowly: queues come and go rarely).
  const queues = useQuery({ ...queuesOptions(15_000), retry: false });
  // On a phone the navigation folds into a menu, closed again by going to a page.
  const [menuOpen, setMenuOpen] = useState(false);
  const { pathname } = useLocation();
  const [menuPath, setMenuPath] = useState(pathname);
  if (menuPath !== pathname) {
    setMenuPath(pathname);
    setMenuOpen(false);
  }
  // Shared with the Overview (same key): the Failed count in the nav stays current.
  const metrics = useQuery({ ...metricsOptions(5000), retry: false });
  const { apiDocsUrl, adminUrl } = runtimeConfig();
  const readSource = useReadSource();
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
      <aside className={`sidebar${menuOpen ? " open" : ""}`} aria-label="Main navigation">
        <div className="brand">
          <span className="brand-mark" aria-hidden="true">
            Q
          </span>
          <span className="brand-name">Job queue</span>
          <ToggleButton open={menuOpen} onToggle={setMenuOpen} controls="main-menu" className="menu-button">
            {menuOpen ? "Close" : "Menu"}
          </ToggleButton>
        </div>
        <nav className="nav" id="main-menu">
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
          <NavLink to="/workers">Workers</NavLink>
          {user.can.create && <NavLink to="/jobs/new">Create job</NavLink>}
          {user.can.view_audit_log && (
            <NavLink to="/audit" title="Who cancelled, retried, edited, deleted or paused what, and when">
              Audit log
            </NavLink>
          )}
          <NavLink to="/rate-limits" title="How many jobs may start per period, by queue, type or key, and the use now">
            Rate limits
          </NavLink>
          <NavLink to="/queues" end title="Every queue: what it holds and runs, its limit, paused or not">
            Queues
          </NavLink>
          {(queues.data ?? []).length > 0 && (
            <div className="nav-group">
              {queues.data!.map((q) => (
                <NavLink key={q.name} to={`/queues/${encodeURIComponent(q.name)}`} title={`Queue ${q.name}`}>
                  <span className="truncate">{q.name}</span>
                  {q.paused && <span className="nav-note">paused</span>}
                </NavLink>
              ))}
            </div>
          )}
        </nav>
        <div className="sidebar-controls">
          <RefreshControl />
          <ThemeControl />
        </div>
        <div className="sidebar-foot">
          <ReadSourceNote source={readSource} />
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
