"""Durable waits (services/waits.py): a running job parked until a time or a signal, without
charging its attempt, and the signals sent to jobs (job_signals, one row per job and name).

A park and a signal's send meet on the job's row: each first locks it (LOCK_RUNNING_JOB,
LOCK_JOB_FOR_SIGNAL, in the same transaction as its write), and its write is the next
statement, whose snapshot is taken after the lock was granted. So whichever comes second sees
what the first committed: a signal sent while the handler ran makes the park due at once, a
park before the signal is woken by it. Neither can miss the other.
"""
from .enqueue import NOTIFY_CHANNEL
from .lifecycle import OUTCOMES_NOTIFY, attempt_start, stale_start

# When a signal's wait has no timeout, the parked job's run time: the end of the range a job's
# run time may take (states.RUN_AT_MIN's other end, what Python's datetime holds). A signal,
# an operator's run-now or a cancel ends such a wait.
UNTIMED_WAIT_UNTIL = "9999-12-31 00:00:00+00"

# --- park: running -> queued until a time or a signal, the attempt not charged ----------------
# The job's row, locked for the park that follows in the same transaction, fenced by the lease.
LOCK_RUNNING_JOB = """
SELECT id FROM jobs WHERE id = %s AND status = 'running' AND lease_token = %s
FOR NO KEY UPDATE
"""
# A wait for signal %(signal)s (NULL: a sleep until %(until)s) records that the job awaits it
# (`awaited_at`) and, on its first wait, the time its timeout ends (`timeout_at`, kept by every
# later wait of that name: a timeout counts from the first wait). The job goes back to queued,
# its attempt given back as a snooze's, due at the time, at the signal's timeout (or never:
# UNTIMED_WAIT_UNTIL), or at once when the signal was sent already. A cancel requested while
# the handler ran wins, as it does over a snooze. Fenced by the lease token: a lost lease parks
# nothing. Its `parked` event says until when and for what. A job due at once wakes its queue's
# workers (%(notify)s); a cancelled one its outcome's waiters.
PARK_IF_RUNNING = """
WITH running AS (
    SELECT id, cancel_requested_at, started_at, available_at, lease_token AS held FROM jobs
    WHERE id = %(id)s AND status = 'running' AND lease_token = %(token)s
),
awaited AS (
    INSERT INTO job_signals (job_id, name, awaited_at, timeout_at, created_at)
    SELECT id, %(signal)s::text, now(),
           now() + make_interval(secs => %(timeout_seconds)s::float8), now()
    FROM running WHERE %(signal)s::text IS NOT NULL
    ON CONFLICT (job_id, name) DO UPDATE SET awaited_at = now()
    RETURNING sent_at, timeout_at
),
target AS (
    SELECT r.id, r.cancel_requested_at, a.sent_at IS NOT NULL AS signal_sent,
           r.started_at, r.available_at AS started_available_at, r.held,
           CASE WHEN %(signal)s::text IS NULL THEN greatest(%(until)s::timestamptz, now())
                WHEN a.sent_at IS NOT NULL THEN now()
                ELSE greatest(coalesce(a.timeout_at, '""" + UNTIMED_WAIT_UNTIL + """'), now())
           END AS due,
           a.timeout_at
    FROM running r LEFT JOIN awaited a ON true
),
upd AS (
    UPDATE jobs j
    SET status = CASE WHEN t.cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        attempts = CASE WHEN t.cancel_requested_at IS NULL THEN j.attempts - 1 ELSE j.attempts END,
        available_at = CASE WHEN t.cancel_requested_at IS NULL THEN t.due ELSE j.available_at END,
        finished_at = CASE WHEN t.cancel_requested_at IS NULL THEN NULL ELSE now() END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM target t
    WHERE j.id = t.id AND j.status = 'running' AND j.lease_token = %(token)s
    RETURNING j.id, j.status, j.attempts, j.queue, j.available_at, t.signal_sent, t.timeout_at,
              t.started_at, t.started_available_at, t.held
),
events AS (
    INSERT INTO job_events (job_id, kind, attempt, worker_id, message, data, created_at)
    SELECT id, CASE status WHEN 'queued' THEN 'parked' ELSE 'cancelled' END,
           CASE status WHEN 'queued' THEN attempts + 1 ELSE attempts END,
           %(worker_id)s, %(message)s,
           jsonb_strip_nulls(jsonb_build_object(
               'lease_token', %(token)s::text, 'signal', %(signal)s::text,
               'until', CASE WHEN status = 'queued' AND available_at
                                  < '""" + UNTIMED_WAIT_UNTIL + """' THEN available_at END,
               'timeout_at', timeout_at, 'signal_sent', CASE WHEN signal_sent THEN true END,
               """ + attempt_start("started_at", "started_available_at") + """))
           || """ + stale_start("held", "%(token)s") + """,
           now()
    FROM upd
),
woken AS (  -- due at once (a signal sent already, a time passed): its queue's workers claim it
    SELECT count(pg_notify('""" + NOTIFY_CHANNEL + """', queue)) AS queues
    FROM upd WHERE %(notify)s AND status = 'queued' AND available_at <= now()
),
notified AS (  -- a cancel that won wakes the outcome's waiters (OUTCOMES_NOTIFY)
    """ + OUTCOMES_NOTIFY.format(rows="(SELECT id FROM upd WHERE status = 'cancelled') AS o") + """
)
SELECT status, available_at <= now() FROM upd
WHERE (SELECT queues FROM woken) >= 0 AND (SELECT count(*) FROM notified) >= 0
"""

# --- a handler's look at its signal, on each run ------------------------------------------------
# Whether signal %s of job %s was sent, its data, and whether the timeout its first wait set
# has passed (on the database clock). No row: never sent nor waited for.
SIGNAL_STATE = """
SELECT sent_at IS NOT NULL, data::text, timeout_at IS NOT NULL AND timeout_at <= now()
FROM job_signals WHERE job_id = %s AND name = %s
"""

# --- send a signal: kept whatever the job's state, waking it if it is parked for it ---------------
# The job's row, locked before the send's write (module docstring); its status says whether
# it may still get a signal (not once it finished).
LOCK_JOB_FOR_SIGNAL = "SELECT status FROM jobs WHERE id = %s FOR NO KEY UPDATE"
# The signal is recorded once per job and name: a second send of a name finds it sent and
# writes nothing (no row back), and so does a send after the timeout of the job's wait for it
# (the wait timed out, and must stay so on every later run of the handler: a late signal is
# refused, not kept). One the job is parked for (awaited, the job queued and not yet due)
# makes it due now and wakes its queue's workers at commit (%(notify)s). The `signalled`
# event names the signal, whether it woke the job and who sent it.
SEND_SIGNAL = """
WITH sent AS (
    INSERT INTO job_signals (job_id, name, data, sent_at, created_at)
    VALUES (%(id)s, %(name)s, %(data)s::jsonb, now(), now())
    ON CONFLICT (job_id, name) DO UPDATE SET data = EXCLUDED.data, sent_at = now()
    WHERE job_signals.sent_at IS NULL
      AND (job_signals.timeout_at IS NULL OR job_signals.timeout_at > now())
    RETURNING awaited_at IS NOT NULL AS awaited
),
woken AS (
    UPDATE jobs j SET available_at = now(), updated_at = now()
    FROM sent
    WHERE sent.awaited AND j.id = %(id)s AND j.status = 'queued' AND j.available_at > now()
    RETURNING j.id, j.queue
),
event AS (
    INSERT INTO job_events (job_id, kind, attempt, message, data, created_at)
    SELECT j.id, 'signalled', j.attempts, %(message)s,
           jsonb_build_object('signal', %(name)s::text,
                              'woke', EXISTS (SELECT 1 FROM woken))
           || CASE WHEN %(actor)s <> '' THEN jsonb_build_object('actor', %(actor)s::text)
                   ELSE '{}'::jsonb END,
           now()
    FROM jobs j JOIN sent ON true
    WHERE j.id = %(id)s
),
notified AS (
    SELECT count(pg_notify('""" + NOTIFY_CHANNEL + """', queue)) AS queues
    FROM woken WHERE %(notify)s
)
SELECT EXISTS (SELECT 1 FROM woken), (SELECT queues FROM notified) FROM sent
"""
