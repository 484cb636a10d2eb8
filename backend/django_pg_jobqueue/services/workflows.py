"""What a job hands on and keeps across attempts: the results of the jobs it was enqueued
after (`ctx.dependency_results`), and its durable steps (`ctx.step()`). The worker reaches
them through its engine (engine.PostgresEngine), as its other reads and writes."""
import json
from typing import Any

from .. import conf, db, sql
from ..exceptions import DependencyResultsTooLarge, LeaseLost


def dependency_results(job_id: int) -> list[Any]:
    """The results of the jobs `job_id` was enqueued after, in the order its `after` gave
    them, None for one that did not succeed (after_failure="run") or no longer exists; read
    in one statement. Raises DependencyResultsTooLarge when their JSON is, in all, over
    JOB_MAX_RESULT_BYTES (none is then read)."""
    limit = conf.get().MAX_RESULT_BYTES
    rows = db.fetch_all(sql.DEPENDENCY_RESULTS, {"job_id": job_id, "max_bytes": limit})
    if rows and rows[0][1] > limit:
        raise DependencyResultsTooLarge(job_id, int(rows[0][1]), limit)
    return [None if text is None else json.loads(text) for text, _ in rows]


def recorded_steps(job_id: int) -> dict[str, Any]:
    """{name: result} of the job's recorded steps."""
    return {name: json.loads(text) for name, text in db.fetch_all(sql.JOB_STEPS, [job_id])}


def record_step(job_id: int, lease_token, *, worker_id: str, name: str, attempt: int,
                result_json: str) -> Any:
    """Record that step `name` of the job ran and returned `result_json` (storable JSON text),
    unless a record of it exists already (another attempt's, racing): returns the recorded
    result, this one or that one. Raises LeaseLost, after recording, when the attempt no
    longer holds the job: its handler must stop."""
    with db.queue_connection().cursor() as cur:
        cur.execute(sql.RECORD_STEP, {"id": job_id, "name": name, "attempt": attempt,
                                      "result": result_json, "token": lease_token})
        recorded, held = cur.fetchone()
        if not recorded:
            cur.execute(sql.JOB_STEP, [job_id, name])
            row = cur.fetchone()
            result_json = row[0] if row is not None else result_json
    if not held:
        raise LeaseLost(job_id, lease_token, f"step {name!r} (worker {worker_id})")
    return json.loads(result_json)
