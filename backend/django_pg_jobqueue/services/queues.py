"""Queue settings: pause, resume and the global concurrency limit of a named queue.

Workers read them inside the claim (paused queues are skipped) and re-read limits at most
once a second, so a change holds across every worker process within a poll interval."""
from ..models import QueueSetting, TxNow


def _update_queue(queue: str, **fields) -> QueueSetting:
    setting, _ = QueueSetting.objects.update_or_create(
        queue=queue, defaults={**fields, "updated_at": TxNow()})
    setting.refresh_from_db()
    return setting


def pause_queue(queue: str) -> QueueSetting:
    return _update_queue(queue, paused=True)


def resume_queue(queue: str) -> QueueSetting:
    return _update_queue(queue, paused=False)


def set_queue_limit(queue: str, concurrency_limit: int | None) -> QueueSetting:
    """At most `concurrency_limit` jobs of this queue run at once across all workers (None: no limit)."""
    if concurrency_limit is not None and concurrency_limit < 1:
        raise ValueError("concurrency_limit must be at least 1, or None for no limit")
    return _update_queue(queue, concurrency_limit=concurrency_limit)
