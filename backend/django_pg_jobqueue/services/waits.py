"""Durable waits: a running job parked until a time or a signal (`ctx.sleep_until`,
`ctx.wait_for_signal`), its attempt not charged and its worker thread free, and the signals
sent to jobs (`send_signal`: Python, the API). The worker reaches the park and its reads
through its engine (engine.PostgresEngine); `send_signal` is an operator's write."""
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .. import conf, db, sql
from ..arguments import check_signal_name, encode_as_payload
from ..db import atomic as queue_atomic
from ..exceptions import (
    InvalidTransition,
    JobNotFound,
    LeaseLost,
    SignalAlreadySent,
    SignalWaitTimedOut,
)
from ..states import TERMINAL, parse_job_id
from .shards import on_job_shard


@dataclass(frozen=True)
class SignalState:
    """What a job's handler finds of signal `name` on a run: sent (and its data), or whether
    the timeout its first wait set has passed (on the database clock)."""
    sent: bool
    data: Any
    timed_out: bool


def signal_state(job_id: int, name: str) -> SignalState:
    """Signal `name` of the job as its handler finds it (never sent nor awaited: neither)."""
    rows = db.fetch_all(sql.SIGNAL_STATE, [job_id, name])
    if not rows:
        return SignalState(False, None, False)
    sent, text, timed_out = rows[0]
    return SignalState(bool(sent), json.loads(text) if sent and text is not None else None,
                       bool(timed_out))


def database_now() -> datetime:
    """The database's clock (a sleep's end is judged on it, as the park's run time is)."""
    return db.fetch_all(sql.DATABASE_NOW, [])[0][0]


def park(job_id: int, lease_token, *, worker_id: str, until: datetime | None = None,
         signal: str | None = None, timeout_seconds: float | None = None) -> str:
    """Park the running job: back to queued without charging the attempt, due at `until` (a
    sleep), or when signal `signal` is sent or its timeout (from its first wait) ends. Returns
    the new status (`queued`, or `cancelled` when a cancel was requested meanwhile). Raises
    LeaseLost when the attempt no longer holds the job: nothing is parked then."""
    if signal is None:
        message = f"parked until {until.isoformat() if until else 'now'}"
    else:
        message = f"parked: waiting for signal {signal!r}" + (
            f" (timeout {timeout_seconds:g}s from its first wait)"
            if timeout_seconds is not None else "")
    with queue_atomic():
        if not db.fetch_all(sql.LOCK_RUNNING_JOB, [job_id, lease_token]):
            raise LeaseLost(job_id, lease_token, "park")
        rows = db.fetch_all(sql.PARK_IF_RUNNING, {
            "id": job_id, "token": lease_token, "worker_id": worker_id, "until": until,
            "signal": signal, "timeout_seconds": timeout_seconds, "message": message,
            "notify": conf.get().LISTEN_NOTIFY})
    if not rows:  # pragma: no cover - the row is locked and fenced above
        raise LeaseLost(job_id, lease_token, "park")
    return rows[0][0]


@on_job_shard
def send_signal(job_id, name, data=None, *, actor: str = "") -> bool:
    """Send signal `name` with `data` (any JSON value, under a payload's rules) to a job that
    has not finished. It is kept (one per job and name) until the job's handler waits for it
    (`ctx.wait_for_signal(name)`), which then returns `data`; a job parked for it is queued
    again at once. Returns whether it woke the job. Raises JobNotFound, InvalidTransition for
    a finished job, SignalAlreadySent for a name sent before, SignalWaitTimedOut once the
    job's wait for it timed out, InvalidJobArgument for a bad name or data."""
    parsed = parse_job_id(job_id)
    if parsed is None:
        raise JobNotFound(job_id)
    check_signal_name(name)
    _, text = encode_as_payload(data, "data")  # stored as a payload is
    by = f" by {actor}" if actor else ""
    with queue_atomic():
        status = db.fetch_all(sql.LOCK_JOB_FOR_SIGNAL, [parsed])
        if not status:
            raise JobNotFound(job_id)
        if status[0][0] in TERMINAL:
            raise InvalidTransition(parsed, "signal", status[0][0])
        rows = db.fetch_all(sql.SEND_SIGNAL, {
            "id": parsed, "name": name, "data": text, "actor": actor,
            "message": f"signal {name!r} sent{by}", "notify": conf.get().LISTEN_NOTIFY})
        if not rows:  # sent before, or its wait timed out
            if signal_state(parsed, name).sent:
                raise SignalAlreadySent(parsed, name, status[0][0])
            raise SignalWaitTimedOut(parsed, name, status[0][0])
    return bool(rows[0][0])
