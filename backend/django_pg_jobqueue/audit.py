"""The invariant audit: check a live database against the state machine.

`python manage.py audit_jobs` runs it; the chaos tests run it after every drain. It reads only,
inside one REPEATABLE READ transaction, so jobs and events are seen from one snapshot even
while workers run. Each check yields violations; the report lists them by check.

Checks:
- replay: every job's events, replayed in id order from `created`, walk only the allowed
  transitions (states.TRANSITIONS) and end in the job's current status, attempt count
  and lease token. Each worker-written transition event carries the lease token of the claim
  it ended, and must match the claim it follows. One history row per attempt (history v2):
  the claim writes no event, and the event that ends an attempt carries its start
  (data.started_at, its lease token, its worker), so the replay claims the attempt there,
  then ends it; the attempt running now is claimed from the job row. So every finished
  attempt has exactly one outcome row carrying its start (a second one for the same attempt
  is counted twice and fails the attempt count; one without a start leaves a job that never
  ran), and a running job has none for its current attempt (it would end the run in the
  replay, and the job is running). The `claimed` events written before still replay as
  before, and an outcome that follows its attempt's `claimed` row may carry the start too.
- double_success: more than one `succeeded` event for a job (a success under two leases).
- stale_lease: a running job whose lease expired longer ago than `stale_after_seconds`
  (default 60 s, well past lease + two reaper intervals): no reaper is running.
- attempts_over_max: attempts > max_attempts.
- finished_with_lock: a succeeded, failed or cancelled job that still has a lock owner, a
  lease token or a lease deadline, or no finish time.
- overlapping_attempts (a notice, not a violation: see NOTICES): two attempts of one job
  under way at the same time: attempt N's
  worker still acted on it (a renewal, completion, failure or snooze it tried and was
  refused, a note that its handler had not returned) after attempt N+1 was claimed (its
  start read from its outcome's row, from the job row while it runs, or from its `claimed`
  row written before history v2). The
  events tell no more than that (no event marks when a handler returned): an overlap whose
  older worker went silent before the next claim is not seen. Fencing kept the late write
  out; the handler still ran twice at once, which handlers must tolerate, and which a lease
  shorter than a stall (a worker blocked on a lock, a long pause) makes common.
- charged_unstarted: an attempt the reaper charged, or failed the job for, that never
  started: its lease expired still under a prefetch buffer's worker id. The reaper gives such
  a job back uncharged (`released`, reason `unstarted`); before it did, a process's death
  charged the jobs waiting in its buffer. (Then, also a job a thread had started within the
  last renewal interval still showed the buffer's id: the start was recorded lazily.)
- search_text: the search's side table (job_search_text) holds exactly the text of every job
  whose payload is not `{}`: no row of a job that is gone, none missing, none different.
- held_without_executor: a running job whose worker process is alive (its heartbeat is fresh,
  and later than the job's lease expiry by more than a renewal period) but whose lease its
  renewer no longer extends: no executor of that process runs it (the watchdog released it),
  or its outcome could not be written. The reaper requeues such a job at its next pass; seeing
  one means a handler or the engine lost a job. Cheap to observe because the renewer renews
  only the jobs a live executor, prefetch buffer or completer answers for: the database sees
  the rest as expired leases of a process still heartbeating. A process killed or frozen stops
  heartbeating too: that is the reaper's case (and stale_lease's), not this one.

Why event ids order a job's history: every statement that moves a job takes its row lock
(UPDATE or SELECT ... FOR UPDATE) before it inserts the event, so the next transition of the
same job waits for the previous one to commit and draws a larger id from the sequence. Events
written without the row lock (`log`, `lease_lost`) change nothing, so the replay skips them.
The claim writes no event: it sits, in the replay, just before the event that ends its attempt
(after any `progress` or `cancel_requested` of that attempt, which the replay accepts while
the job is queued when that attempt's end, or the job running it now, follows).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from . import sql
from .db import atomic as queue_atomic
from .db import queue_connection
from .states import EventKind, Status, can_transition

# event kind -> the status it moves the job to (None: depends on the event; absent: no move).
_TARGET = {
    EventKind.CLAIMED: Status.RUNNING,
    EventKind.SUCCEEDED: Status.SUCCEEDED,
    EventKind.FAILED: Status.FAILED,
    EventKind.RETRY_SCHEDULED: Status.QUEUED,
    EventKind.RELEASED: Status.QUEUED,
    EventKind.SNOOZED: Status.QUEUED,
    EventKind.PARKED: Status.QUEUED,  # a durable wait: back to queued, uncharged
    EventKind.CANCELLED: Status.CANCELLED,
    EventKind.EXPIRED: Status.CANCELLED,  # not started by its expires_at (the reaper's sweep)
    EventKind.RETRIED: Status.QUEUED,
    EventKind.BLOCKED: Status.WAITING,  # enqueued after other jobs
    EventKind.UNBLOCKED: Status.QUEUED,  # every job it waited for finished
    EventKind.LEASE_EXPIRED: None,  # data.next_status: queued, failed or cancelled
}
# Events that change nothing but must happen while the job runs (written under its row lock).
_WHILE_RUNNING = {EventKind.PROGRESS, EventKind.CANCEL_REQUESTED}

CHECKS = {
    "replay": "events replay to the job's current state",
    "double_success": "at most one success per job",
    "stale_lease": "no running job with a long-expired lease",
    "attempts_over_max": "attempts within max_attempts",
    "finished_with_lock": "finished jobs hold no lock and have a finish time",
    "held_without_executor": "no running job left unrenewed by its live worker process",
    "search_text": "the search's text of every job, and of no job that is gone",
    "overlapping_attempts": "no two attempts of one job under way at once",
    "charged_unstarted": "no attempt charged by the reaper that never started",
}
# Findings the guarantees allow but an operator should see: listed (NOTE), counted, and not
# a broken invariant (`ok` ignores them; `audit_jobs --strict` fails on them too). Two
# attempts under way at once are at-least-once delivery at work (a worker stalled past its
# lease: handlers must be idempotent), but each is a handler that ran twice concurrently.
NOTICES = frozenset({"overlapping_attempts"})
_SEARCH_TEXT_PROBLEMS = {
    "orphan": "a row in job_search_text for a job that does not exist (deleted by a statement "
              "that left its searchable text behind)",
    "missing": "no row in job_search_text for its payload: the search does not find it by its "
               "payload (enqueued by a release before migration 0016?)",
    "differs": "its row in job_search_text is not its payload's text",
}

# A live process's renewer renews every job it holds for a live executor at least every
# 2 s; one that heartbeated this long after a job's lease ran out has stopped renewing it.
HELD_WITHOUT_EXECUTOR_SLACK_SECONDS = 3.0


@dataclass
class Violation:
    check: str
    job_id: int | None
    message: str

    def as_dict(self) -> dict:
        return {"check": self.check, "job_id": self.job_id, "message": self.message}


@dataclass
class AuditReport:
    jobs: int = 0
    events: int = 0
    seconds: float = 0.0
    live_workers: int = 0
    stale_after_seconds: float = 60.0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No invariant broken (notices aside: see NOTICES)."""
        return not any(v.check not in NOTICES for v in self.violations)

    @property
    def notices(self) -> list[Violation]:
        return [v for v in self.violations if v.check in NOTICES]

    def by_check(self) -> dict[str, list[Violation]]:
        out: dict[str, list[Violation]] = {name: [] for name in CHECKS}
        for v in self.violations:
            out.setdefault(v.check, []).append(v)
        return out

    def format(self, limit: int = 20) -> str:
        lines = [(f"audit_jobs: {self.jobs} jobs, {self.events} events checked in "
                 f"{self.seconds:.2f}s; {self.live_workers} live worker process(es)")]
        for name, found in self.by_check().items():
            title = CHECKS.get(name, name)
            if not found:
                lines.append(f"  ok    {title}")
                continue
            if name in NOTICES:
                lines.append(f"  NOTE  {title}: {len(found)} found")
            else:
                lines.append(f"  FAIL  {title}: {len(found)} violation(s)")
            for v in found[:limit]:
                where = f"job {v.job_id}: " if v.job_id is not None else ""
                lines.append(f"          {where}{v.message}")
            if len(found) > limit:
                lines.append(f"          ... and {len(found) - limit} more")
        notices = len(self.notices)
        broken = len(self.violations) - notices
        lines.append("result: " + ("clean" if self.ok else f"{broken} violation(s)")
                     + (f"; {notices} notice(s)" if notices else ""))
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"jobs": self.jobs, "events": self.events, "seconds": round(self.seconds, 3),
                "live_workers": self.live_workers, "ok": self.ok, "notices": len(self.notices),
                "counts": {k: len(v) for k, v in self.by_check().items()},
                "violations": [v.as_dict() for v in self.violations]}


def audit(*, stale_after_seconds: float = 60.0, job_ids: list[int] | None = None) -> AuditReport:
    """Run every check and return the report (never raises on a violation)."""
    started = time.monotonic()
    report = AuditReport(stale_after_seconds=stale_after_seconds)
    # Only a transaction's first statement may set its isolation level: inside a caller's
    # transaction (a test case, say) the audit reads that transaction's snapshot instead.
    outermost = not queue_connection().in_atomic_block
    with queue_atomic():
        if outermost:
            with queue_connection().cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        _row_checks(report, stale_after_seconds, job_ids)
        _double_success(report, job_ids)
        _search_text(report, job_ids)
        _attempts(report, job_ids)
        _replay(report, job_ids)
    report.seconds = time.monotonic() - started
    return report


def _id_filter(job_ids, column="id") -> tuple[str, list]:
    if job_ids is None:
        return "", []
    return sql.AUDIT_IDS_FILTER.format(column=column), [list(job_ids)]


def _row_checks(report: AuditReport, stale_after: float, job_ids) -> None:
    extra, params = _id_filter(job_ids)
    extra_j, params_j = _id_filter(job_ids, "j.id")
    with queue_connection().cursor() as cur:
        cur.execute(sql.AUDIT_LIVE_WORKERS)
        report.live_workers = cur.fetchone()[0]
        cur.execute(sql.AUDIT_STALE_LEASES.format(ids=extra), [float(stale_after), *params])
        for job_id, locked_by, ago in cur.fetchall():
            report.violations.append(Violation(
                "stale_lease", job_id,
                f"running on {locked_by}, lease expired {ago}s ago (> {stale_after:g}s): no "
                f"reaper is running (run `manage.py reap_jobs`, or start `run_job_workers`)"))
        cur.execute(sql.AUDIT_HELD_WITHOUT_EXECUTOR.format(ids=extra_j),
                    [HELD_WITHOUT_EXECUTOR_SLACK_SECONDS, *params_j])
        for job_id, locked_by, process, after in cur.fetchall():
            report.violations.append(Violation(
                "held_without_executor", job_id,
                f"running on {locked_by}, whose process {process} is alive (heartbeat {after}s "
                f"after the lease expired) but no longer renews it: no executor of it runs the "
                f"job, or its outcome could not be written (the reaper requeues it)"))
        cur.execute(sql.AUDIT_ATTEMPTS_OVER_MAX.format(ids=extra), params)
        for job_id, attempts, max_attempts in cur.fetchall():
            report.violations.append(Violation(
                "attempts_over_max", job_id, f"attempts {attempts} > max_attempts {max_attempts}"))
        cur.execute(sql.AUDIT_FINISHED_WITH_LOCK.format(ids=extra), params)
        for job_id, status, locked_by, token, lease_expires_at, finished_at in cur.fetchall():
            held = ", ".join(f"{name}={value}" for name, value in (
                ("locked_by", locked_by), ("lease_token", token),
                ("lease_expires_at", lease_expires_at)) if value is not None)
            report.violations.append(Violation(
                "finished_with_lock", job_id,
                f"{status} but " + (f"still holds {held}" if held else "has no finished_at")))


def _double_success(report: AuditReport, job_ids) -> None:
    extra, params = _id_filter(job_ids, "job_id")
    with queue_connection().cursor() as cur:
        cur.execute(sql.AUDIT_DOUBLE_SUCCESS.format(ids=extra), params)
        for job_id, n, tokens in cur.fetchall():
            report.violations.append(Violation(
                "double_success", job_id,
                f"{n} succeeded events, under lease tokens {', '.join(map(str, tokens))}"))


def _search_text(report: AuditReport, job_ids) -> None:
    extra, params = _id_filter(job_ids)
    extra_s, params_s = _id_filter(job_ids, "job_id")
    with queue_connection().cursor() as cur:
        cur.execute(sql.AUDIT_SEARCH_TEXT.format(ids=extra, ids_s=extra_s), params + params_s)
        for job_id, problem in cur.fetchall():
            report.violations.append(Violation("search_text", job_id,
                                               _SEARCH_TEXT_PROBLEMS[problem]))


def _attempts(report: AuditReport, job_ids) -> None:
    """overlapping_attempts and charged_unstarted, from the event history."""
    extra, params = _id_filter(job_ids, "job_id")
    with queue_connection().cursor() as cur:
        extra_j, params_j = _id_filter(job_ids)
        cur.execute(sql.AUDIT_OVERLAPPING_ATTEMPTS.format(ids=extra, job_ids=extra_j),
                    params + params + params_j)
        for (job_id, attempt, worker, next_attempt, next_worker, next_at, kind, refused,
             late_worker, late_at) in cur.fetchall():
            sign = (f"its {refused} was refused" if kind == "lease_lost"
                    else "its handler had not returned")
            report.violations.append(Violation(
                "overlapping_attempts", job_id,
                f"attempt {attempt} (claimed by {worker}) was still under way when attempt "
                f"{next_attempt} was claimed by {next_worker} at {next_at:%Y-%m-%d %H:%M:%S}: "
                f"at {late_at:%H:%M:%S.%f} {late_worker} still held it ({sign})"))
        cur.execute(sql.AUDIT_CHARGED_UNSTARTED.format(ids=extra), params)
        for job_id, attempt, worker, next_status, at in cur.fetchall():
            what = ("failed the job for good" if next_status == "failed"
                    else f"charged it (the job went {next_status})")
            report.violations.append(Violation(
                "charged_unstarted", job_id,
                f"attempt {attempt}'s lease expired still under {worker}, so it never started, "
                f"yet the reaper {what} at {at:%Y-%m-%d %H:%M:%S}"))


def _stream(statement: str, params: list):
    """Rows of a large query through a server-side cursor, a few thousand at a time."""
    with queue_connection().chunked_cursor() as cur:
        cur.execute(statement, params)
        while rows := cur.fetchmany(5000):
            yield from rows


def _replay(report: AuditReport, job_ids) -> None:
    extra, params = _id_filter(job_ids)
    jobs = _stream(sql.AUDIT_REPLAY_JOBS.format(ids=extra), params)
    extra_e, params_e = _id_filter(job_ids, "job_id")
    events = _stream(sql.AUDIT_REPLAY_EVENTS.format(ids=extra_e), params_e)
    pending = next(events, None)
    for job_id, status, attempts, token in jobs:
        report.jobs += 1
        history = []
        # Events of a job that no longer exists cannot exist (the history's guard); skip any anyway.
        while pending is not None and pending[0] < job_id:
            pending = next(events, None)
        while pending is not None and pending[0] == job_id:
            history.append(pending[1:])
            pending = next(events, None)
        report.events += len(history)
        for problem in replay_job(history, status=status, attempts=attempts, lease_token=token):
            report.violations.append(Violation("replay", job_id, problem))


def replay_job(history, *, status: str, attempts: int, lease_token: str | None) -> list[str]:
    """Replay one job's events [(event id, kind, attempt, lease token, next status, carries
    its attempt's start, the start's token when not the lease token)] and return what does
    not add up (empty: the history explains the row)."""
    problems: list[str] = []
    if not history:
        return ["no events at all (not even `created`)"]
    if history[0][1] != EventKind.CREATED:
        problems.append(f"history does not start with `created` (first: {history[0][1]} "
                        f"#{history[0][0]})")
    state, spent, token = Status.QUEUED, 0, None
    # Events of an attempt whose start no row has shown yet (history v2: its `progress` or
    # `cancel_requested` come before the outcome that carries the start): (where, attempt).
    unstarted: list[tuple[str, int]] = []

    def claim(where: str, attempt: int, ev_token) -> None:
        nonlocal state, spent, token
        if not can_transition(state, Status.RUNNING):
            problems.append(f"{where}: {state} -> {Status.RUNNING} is not an allowed transition")
        if attempt != spent + 1:
            problems.append(f"{where} is attempt {attempt}, expected {spent + 1}")
        for early, of in unstarted:
            if of != attempt:
                problems.append(f"{early} while {state}")
        unstarted.clear()
        spent, token, state = attempt, ev_token, Status.RUNNING

    start = 1 if history[0][1] == EventKind.CREATED else 0
    for event_id, kind, attempt, ev_token, next_status, *rest in history[start:]:
        # history v2: whether it carries its attempt's start, and the start's own token if
        # it differs from the outcome's (sql.stale_start: a write applied without its fence)
        carries_start = bool(rest and rest[0])
        start_token = (rest[1] if len(rest) > 1 else None) or ev_token
        where = f"{kind} #{event_id}"
        if kind == EventKind.CREATED:
            problems.append(f"a second `created` event ({where})")
            continue
        if kind in _WHILE_RUNNING:
            if state != Status.RUNNING:
                unstarted.append((where, attempt))  # its attempt's start may follow
            continue
        if kind not in _TARGET:
            continue  # log, lease_lost, lease_renewed, timed_out: no move
        target = Status(next_status) if kind == EventKind.LEASE_EXPIRED and next_status \
            else _TARGET[kind]
        if target is None:
            problems.append(f"{where} does not say where the job went")
            continue
        if carries_start and kind != EventKind.CLAIMED and state != Status.RUNNING:
            claim(f"the start of {where}", attempt, start_token)  # history v2: one row an attempt
        for early, _ in unstarted:
            problems.append(f"{early} while {state}")
        unstarted.clear()
        if kind == EventKind.CLAIMED:
            claim(where, attempt, ev_token)
            continue
        if not can_transition(state, target):
            problems.append(f"{where}: {state} -> {target} is not an allowed transition")
        if state == Status.RUNNING and kind != EventKind.RETRIED:
            # Leaving running: a worker write (or the reaper) names the lease it ended.
            if ev_token is None:
                problems.append(f"{where} ended a run without naming its lease token")
            elif ev_token is not None and ev_token != token:
                problems.append(f"{where} under lease {ev_token}, but the job was running under "
                                f"{token}: a stale write was applied")
        if kind in (EventKind.RELEASED, EventKind.SNOOZED, EventKind.PARKED):
            spent -= 1  # given back without charging the attempt
        token = None
        state = target
    if status == Status.RUNNING and state != Status.RUNNING:
        # The attempt running now has no row yet: the job row is its start.
        claim("the running attempt (its job row)", attempts, lease_token)
    for early, _ in unstarted:
        problems.append(f"{early} while {state}")
    if state != status:
        problems.append(f"events replay to {state}, but the job is {status}")
    elif state == Status.RUNNING and token != lease_token:
        problems.append(f"running under lease {lease_token}, but its last claim stamped {token}")
    if spent != attempts:
        problems.append(f"events count {spent} attempt(s), but the job says {attempts}")
    return problems
