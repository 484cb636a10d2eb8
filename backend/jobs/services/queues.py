"""Queue settings: pause, resume and the global concurrency limit of a named queue.

Workers read them inside the claim (paused queues are skipped) and re-read limits at most
once a second, so a change holds across every worker process within a poll interval."""
from django.db.models.functions import Now

from ..models import QueueSetting


def pause_queue(queue: str) -> QueueSetting:
    setting, _ = QueueSetting.objects.update_or_create(
        queue=queue, defaults={"paused": True, "updated_at": Now()})
    setting.refresh_from_db()
    return setting


def resume_queue(queue: str) -> QueueSetting:
    setting, _ = QueueSetting.objects.update_or_create(
        queue=queue, defaults={"paused": False, "updated_at": Now()})
    setting.refresh_from_db()
    return setting


def set_queue_limit(queue: str, concurrency_limit: int | None) -> QueueSetting:
    """At most `concurrency_limit` jobs of this queue run at once across all workers (None: no limit)."""
    if concurrency_limit is not None and concurrency_limit < 1:
        raise ValueError("concurrency_limit must be at least 1, or None for no limit")
    setting, _ = QueueSetting.objects.update_or_create(
        queue=queue, defaults={"concurrency_limit": concurrency_limit, "updated_at": Now()})
    setting.refresh_from_db()
    return setting
