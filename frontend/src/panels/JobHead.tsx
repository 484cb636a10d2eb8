import { type ReactNode, useRef, useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Link, useNavigate } from "react-router";
import { isFinished, jobMutations } from "../api/jobs";
import type { JobDetail } from "../api/types";
import { type LastAction, actionNotice, createdNotice } from "../lib/jobView";
import { cameFrom } from "../lib/cameFrom";
import { useNow } from "../lib/time";
import { useUser } from "../lib/useUser";
import { InlineConfirm } from "../components/Confirm";
import { JobEditBar } from "../components/JobEditBar";
import { Notice } from "../components/Notice";
import { SignalForm } from "../components/SignalForm";
import { StatusBadge } from "../components/StatusBadge";

/** What the create form hands the job page in the router's state. */
export type CreatedState = { created?: boolean; replayed?: boolean; rerunOf?: number };

/**
 * The title row (breadcrumb, title, badge, the live dot and the actions) and, under it, the
 * notices: the confirmation before cancelling a running job, the last action's outcome and
 * the creation notice, each read against the job as it is now (lib/jobView.ts), so a notice
 * goes once it no longer applies.
 */
export function JobHead({ job, created, live }: { job: JobDetail; created: CreatedState; live: ReactNode }) {
  const user = useUser();
  const queryClient = useQueryClient();
  const cancel = useMutation(jobMutations.cancel(queryClient));
  const retry = useMutation(jobMutations.retry(queryClient));
  const [confirming, setConfirming] = useState(false);
  const cancelButton = useRef<HTMLButtonElement>(null);
  const remove = useMutation(jobMutations.delete(queryClient));
  const rerun = useMutation(jobMutations.rerun(queryClient));
  const runNow = useMutation(jobMutations.runNow(queryClient));
  const edit = useMutation(jobMutations.edit(queryClient));
  const [editing, setEditing] = useState(false);
  const signal = useMutation(jobMutations.signal(queryClient));
  const [signalling, setSignalling] = useState(false);
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const deleteButton = useRef<HTMLButtonElement>(null);
  const navigate = useNavigate();
  // Only a finished job can be deleted: a confirmation for one retried meanwhile no longer applies.
  const askToDelete = confirmingDelete && isFinished(job);
  const canCancel = !isFinished(job) && !job.cancel_requested_at;
  const canRetry = job.status === "failed" || job.status === "cancelled";
  // A confirmation for a job that has meanwhile finished no longer applies.
  const askToCancel = confirming && canCancel && job.status === "running";
  const last =
    cancel.submittedAt > retry.submittedAt
      ? { verb: "cancel" as const, m: cancel }
      : { verb: "retry" as const, m: retry };
  const action: LastAction | null =
    last.m.isIdle || last.m.isPending
      ? null
      : { verb: last.verb, answer: last.m.data, error: last.m.error ?? undefined };
  const outcome = actionNotice(action, job);
  const now = useNow(1000);
  // A job that has not started may change (priority, run time) and, if delayed, run now.
  const notStarted = job.status === "queued" || job.status === "waiting";
  const delayed = notStarted && Date.parse(job.available_at) > now;
  const welcome = createdNotice(created, job, now);
  const doCancel = () => {
    setConfirming(false);
    retry.reset();
    cancel.mutate(job.id);
  };
  return (
    <>
      <div className="page-head">
        <div className="page-title">
          <div className="muted breadcrumb">
            <Link to="/jobs">Jobs</Link> / #{job.id}
          </div>
          <h1 className="title-with-badge">
            <span>
              #{job.id} {job.type}
            </span>{" "}
            <StatusBadge job={job} />
          </h1>
        </div>
        <div className="actions">
          {live}
          {user.can.cancel && (
            <button
              ref={cancelButton}
              type="button"
              className="danger"
              disabled={!canCancel || cancel.isPending || askToCancel}
              title={
                canCancel
                  ? "Stop this job"
                  : job.cancel_requested_at
                    ? "Cancel already requested"
                    : "The job has finished"
              }
              onClick={() => (job.status === "running" ? setConfirming(true) : doCancel())}
            >
              {cancel.isPending ? "Cancelling…" : "Cancel"}
            </button>
          )}
          {user.can.retry && (
            <button
              type="button"
              className="primary"
              disabled={!canRetry || retry.isPending}
              title={canRetry ? "Queue it again" : "Only failed or cancelled jobs can be retried"}
              onClick={() => {
                cancel.reset();
                retry.mutate(job.id);
              }}
            >
              {retry.isPending ? "Retrying…" : "Retry"}
            </button>
          )}
          {user.can.rerun && job.status === "succeeded" && (
            <button
              type="button"
              disabled={rerun.isPending}
              title="Enqueue a new job with this one's type, payload and queue"
              onClick={() =>
                rerun.mutate(job.id, {
                  onSuccess: (copy) => void navigate(`/jobs/${copy.id}`, { state: { rerunOf: job.id } }),
                })
              }
            >
              {rerun.isPending ? "Re-running…" : "Re-run"}
            </button>
          )}
          {user.can.run_now && delayed && (
            <button
              type="button"
              disabled={runNow.isPending}
              title="Make this delayed job runnable now"
              onClick={() => runNow.mutate(job.id)}
            >
              {runNow.isPending ? "Starting…" : "Run now"}
            </button>
          )}
          {user.can.run_now && notStarted && (
            <button
              type="button"
              aria-expanded={editing}
              title="Change its priority or its run time"
              onClick={() => {
                edit.reset();
                setEditing(!editing);
              }}
            >
              Edit
            </button>
          )}
          {user.can.run_now && job.awaiting_signal && (
            <button
              type="button"
              aria-expanded={signalling}
              title={`Send the signal “${job.awaiting_signal}” this job waits for`}
              onClick={() => {
                signal.reset();
                setSignalling(!signalling);
              }}
            >
              Send signal
            </button>
          )}
          {user.can.delete && isFinished(job) && (
            <button
              ref={deleteButton}
              type="button"
              className="danger"
              disabled={remove.isPending || askToDelete}
              title="Delete this job and its events"
              onClick={() => setConfirmingDelete(true)}
            >
              {remove.isPending ? "Deleting…" : "Delete"}
            </button>
          )}
        </div>
      </div>
      {askToDelete && (
        <div className="notice warn confirm-bar">
          <InlineConfirm
            testId="confirm-delete"
            tone="danger"
            question={`Delete job #${job.id} and its events? This cannot be undone.`}
            confirmLabel="Yes, delete it"
            keepLabel="Keep it"
            busy={remove.isPending}
            onConfirm={() =>
              remove.mutate(job.id, {
                // Back where the operator came from (a filtered list, the failed jobs), in place of
                // this page: Back then does not land on a job that no longer exists.
                onSuccess: () => void navigate(cameFrom() ?? "/jobs", { replace: true, state: { deleted: job.id } }),
                onSettled: () => setConfirmingDelete(false),
              })
            }
            onKeep={() => setConfirmingDelete(false)}
            returnFocus={deleteButton}
          />
        </div>
      )}
      {editing && notStarted && (
        <JobEditBar
          job={job}
          busy={edit.isPending}
          error={edit.isError ? (edit.error as Error).message : null}
          onSave={(body) => edit.mutate({ id: job.id, body }, { onSuccess: () => setEditing(false) })}
          onClose={() => setEditing(false)}
        />
      )}
      {signalling && job.awaiting_signal && (
        <SignalForm
          jobId={job.id}
          awaiting={job.awaiting_signal}
          busy={signal.isPending}
          error={signal.isError ? (signal.error as Error).message : null}
          onSend={(body) => signal.mutate({ id: job.id, body }, { onSuccess: () => setSignalling(false) })}
          onClose={() => setSignalling(false)}
        />
      )}
      {signal.isSuccess && (
        <div className="notice info" role="status" data-testid="signal-outcome">
          Signal “{signal.data.name}” sent to job #{job.id}
          {signal.data.woke ? ": it runs again now." : "; it is kept until the job waits for it."}
        </div>
      )}
      {runNow.isError && (
        <div className="notice error" role="alert" data-testid="run-now-outcome">
          Could not run job #{job.id} now: {(runNow.error as Error).message}
        </div>
      )}
      {rerun.isError && (
        <div className="notice error" role="alert" data-testid="rerun-outcome">
          Could not re-run job #{job.id}: {(rerun.error as Error).message}
        </div>
      )}
      {created.rerunOf !== undefined && (
        <div className="notice info" role="status" data-testid="rerun-notice">
          This job is a copy of <Link to={`/jobs/${created.rerunOf}`}>#{created.rerunOf}</Link>, re-run from it.
        </div>
      )}
      {remove.isError && (
        <div className="notice error" role="alert" data-testid="delete-outcome">
          Could not delete job #{job.id}: {(remove.error as Error).message}
        </div>
      )}
      {askToCancel && (
        <div className="notice warn confirm-bar">
          <InlineConfirm
            testId="confirm-cancel"
            tone="danger"
            question={`Cancel job #${job.id} while it runs? The worker stops the handler at its next check and the job ends cancelled.`}
            confirmLabel="Yes, cancel it"
            keepLabel="Keep it running"
            onConfirm={doCancel}
            onKeep={() => setConfirming(false)}
            returnFocus={cancelButton}
          />
        </div>
      )}
      <Notice notice={outcome} testId="action-outcome" />
      <Notice notice={welcome} testId="created-notice" />
    </>
  );
}
