"""Queue settings: pause, resume, the global concurrency limit, fair shares and priority aging
of a named queue.

Workers read them inside the claim (paused queues are skipped) and re-read limits at most
once a second, so a change holds across every worker process within a poll interval.

Only a queue that exists can be changed (`QueueNotFound` otherwise), so that a typo never
leaves a phantom paused queue behind. A queue exists when (`queue_exists`):
- it holds jobs, of any status;
- a registered handler declares it (`@handler(..., queue="media")`);
- a Django Tasks backend of this queue lists it in its QUEUES, or a periodic schedule names it;
- it already has a setting (it was paused, resumed or limited before; its jobs may be pruned).
A setting that no longer says anything (resumed, no limit) for a queue that nothing else makes
exist is removed: that is how a phantom queue left by an older version disappears.
"""
from .. import conf, db, sql
from ..arguments import check_aging, check_fairness_weights, type_error
from ..catalogue import queue_exists
from ..db import atomic as queue_atomic
from ..exceptions import InvalidJobArgument, QueueNotFound
from ..models import QueueSetting, TxNow
from ..states import MAX_FAIRNESS_WEIGHTS, AuditTarget, OperatorAction
from . import audit_log
from .shards import on_queue_shard

# What a queue without a setting row is: running, no limit.
_NO_SETTING: dict[str, object] = {"paused": False, "concurrency_limit": None, "fair": False,
               "aging_seconds": None, "aging_max_priority": None, "fairness_weights": {}}


def _update_queue(queue: str, action: OperatorAction, actor: str, *,
                  audit: dict | None = None, **fields) -> QueueSetting:
    """Write the queue's setting and, if it changed, the audit log's entry (old and new values
    of what changed, or `audit` when given), in one transaction on the queue's database."""
    with queue_atomic():
        if not queue_exists(queue):
            raise QueueNotFound(queue)
        before = QueueSetting.objects.select_for_update().filter(queue=queue).first()
        setting, _ = QueueSetting.objects.update_or_create(
            queue=queue, defaults={**fields, "updated_at": TxNow()})
        setting.refresh_from_db()
        old = {name: getattr(before, name) if before else _NO_SETTING[name] for name in fields}
        changed = {name: [old[name], value] for name, value in fields.items()
                   if old[name] != value}
        if changed:
            audit_log.record(action, AuditTarget.QUEUE, queue, actor=actor,
                             data=changed if audit is None else audit)
        says_nothing = all(getattr(setting, name) == value for name, value in _NO_SETTING.items())
        if says_nothing and not queue_exists(queue, setting_counts=False):
            setting.delete()  # says nothing, for a queue nothing else makes exist
    return setting


@on_queue_shard
def pause_queue(queue: str, *, actor: str = "") -> QueueSetting:
    """Workers stop claiming `queue`'s jobs. QueueNotFound (a LookupError) if it does not exist.
    `actor`: who did it, for the audit log."""
    return _update_queue(queue, OperatorAction.PAUSE_QUEUE, actor, paused=True)


@on_queue_shard
def resume_queue(queue: str, *, actor: str = "") -> QueueSetting:
    """Workers claim `queue`'s jobs again, woken at commit (a NOTIFY of the queue, as an
    enqueue sends) rather than at their next poll. QueueNotFound if it does not exist."""
    with queue_atomic():
        setting = _update_queue(queue, OperatorAction.RESUME_QUEUE, actor, paused=False)
        if conf.get().LISTEN_NOTIFY:
            db.fetch_all(sql.NOTIFY_QUEUE, [sql.NOTIFY_CHANNEL, queue])
    return setting


@on_queue_shard
def set_queue_limit(queue: str, concurrency_limit: int | None, *,
                    actor: str = "") -> QueueSetting:
    """At most `concurrency_limit` jobs of this queue run at once across all workers (None: no
    limit). QueueNotFound if the queue does not exist."""
    if concurrency_limit is not None and concurrency_limit < 1:
        raise ValueError("concurrency_limit must be at least 1, or None for no limit")
    return _update_queue(queue, OperatorAction.SET_QUEUE_LIMIT, actor,
                         concurrency_limit=concurrency_limit)


@on_queue_shard
def set_queue_fairness(queue: str, fair: bool, *, actor: str = "") -> QueueSetting:
    """Claims take this queue's jobs round-robin across their fairness keys (True), or in
    plain claim order (False). QueueNotFound if the queue does not exist;
    InvalidJobArgument naming `fair` for anything but a bool. Workers follow within a second
    (docs/how-to/fairness.md)."""
    if not isinstance(fair, bool):
        raise type_error("fair", "True or False", fair)
    return _update_queue(queue, OperatorAction.SET_QUEUE_FAIRNESS, actor, fair=fair)


@on_queue_shard
def set_queue_aging(queue: str, aging_seconds: float | None, *,
                    aging_max_priority: int | None = None, actor: str = "") -> QueueSetting:
    """A queued job of this queue counts as one priority higher for every `aging_seconds` it
    has been due, up to `aging_max_priority` (None: PRIORITY_MAX), never below its own; None turns
    aging off. QueueNotFound if the queue does not exist; InvalidJobArgument naming the
    argument for a bad value (docs/how-to/fairness.md)."""
    aging_seconds, aging_max_priority = check_aging(aging_seconds, aging_max_priority)
    return _update_queue(queue, OperatorAction.SET_QUEUE_AGING, actor,
                         aging_seconds=aging_seconds, aging_max_priority=aging_max_priority)


@on_queue_shard
def set_fairness_weights(queue: str, weights: dict[str, int | None], *,
                         actor: str = "") -> QueueSetting:
    """In this queue, when fair, the jobs of each fairness key named in `weights` take that
    many turns per round (a key's n-th job is in turn ceil(n / weight)); None removes the
    key's weight; keys not named keep theirs. A key is named as stored, or as a prefix
    ending in `*` (`tenant:*`): a key takes the weight of its own name, else of the longest
    prefix it starts with, else 1. QueueNotFound if the queue does not exist;
    InvalidJobArgument naming `fairness_weights` for a bad key or weight, or for more than
    MAX_FAIRNESS_WEIGHTS weighted keys. Workers follow within a second
    (docs/how-to/fairness.md). The audit log's entry: {key: [old weight, new weight]} for
    each weight changed (None: no weight of its own)."""
    weights = check_fairness_weights(weights)
    with queue_atomic():
        if not queue_exists(queue):
            raise QueueNotFound(queue)
        # The row first (if missing), then locked: two operators' weights for one queue are
        # written one after the other, neither lost.
        QueueSetting.objects.get_or_create(queue=queue)
        old = QueueSetting.objects.select_for_update().get(queue=queue).fairness_weights
        new = {k: v for k, v in old.items() if k not in weights}
        new.update((k, v) for k, v in weights.items() if v is not None)
        if len(new) > MAX_FAIRNESS_WEIGHTS:
            raise InvalidJobArgument("fairness_weights", f"at most {MAX_FAIRNESS_WEIGHTS} "
                                                         f"weighted keys per queue")
        changes = {k: [old.get(k), v] for k, v in weights.items() if old.get(k) != v}
        return _update_queue(queue, OperatorAction.SET_FAIRNESS_WEIGHTS, actor, audit=changes,
                             fairness_weights=new)
