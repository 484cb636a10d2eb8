"""What a job hands on: the results of the jobs it was enqueued after
(`ctx.dependency_results`). The worker reaches them through its engine
(engine.PostgresEngine), as its other reads and writes."""
import json
from typing import Any

from .. import conf, db, sql
from ..exceptions import DependencyResultsTooLarge


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

