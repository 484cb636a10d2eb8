import { useQuery } from "@tanstack/react-query";
import { Navigate, Route, Routes, useLocation } from "react-router";
import { meOptions } from "./api/auth";
import { Layout } from "./panels/Layout";
import { ErrorState, Loading } from "./components/States";
import { AuditLogPage } from "./pages/AuditLogPage";
import { BatchPage } from "./pages/BatchPage";
import { CreateJobPage } from "./pages/CreateJobPage";
import { FailedJobsPage } from "./pages/FailedJobsPage";
import { JobDetailPage } from "./pages/JobDetailPage";
import { JobsPage } from "./pages/JobsPage";
import { LoginPage } from "./pages/LoginPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { OverviewPage } from "./pages/OverviewPage";
import { QueuePage } from "./pages/QueuePage";
import { QueuesPage } from "./pages/QueuesPage";
import { RateLimitsPage } from "./pages/RateLimitsPage";
import { SchedulesPage } from "./pages/SchedulesPage";
import { WorkersPage } from "./pages/WorkersPage";

export function App() {
  return (
    <Routes>
      <Route path="/login" element={<LoginPage />} />
      <Route element={<RequireAuth />}>
        <Route index element={<OverviewPage />} />
        <Route path="jobs" element={<JobsPage />} />
        <Route path="jobs/new" element={<CreateJobPage />} />
        <Route path="jobs/:id" element={<JobDetailPage />} />
        <Route path="failed" element={<FailedJobsPage />} />
        <Route path="schedules" element={<SchedulesPage />} />
        <Route path="workers" element={<WorkersPage />} />
        <Route path="queues" element={<QueuesPage />} />
        <Route path="queues/:name" element={<QueuePage />} />
        <Route path="audit" element={<AuditLogPage />} />
        <Route path="rate-limits" element={<RateLimitsPage />} />
        <Route path="batches/:id" element={<BatchPage />} />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}

/** Every page but the login needs a session; without one, go log in and come back. */
function RequireAuth() {
  const location = useLocation();
  const me = useQuery(meOptions());
  if (me.isPending) {
    return (
      <div className="login">
        <Loading label="Checking your session…" />
      </div>
    );
  }
  if (me.isError) {
    return (
      <div className="login">
        <div style={{ maxWidth: 480 }}>
          <ErrorState error={me.error} title="The API is not answering" onRetry={() => void me.refetch()} />
        </div>
      </div>
    );
  }
  if (!me.data) {
    const next = location.pathname + location.search;
    return <Navigate to={`/login${next !== "/" ? `?next=${encodeURIComponent(next)}` : ""}`} replace />;
  }
  return <Layout user={me.data} />;
}
