"""The `poison` handler: one job type whose payload picks what it returns or raises, for the
hostile-handler property test (tests/system/test_poison_property.py).

Worker subprocesses import this module through JOB_EXTRA_HANDLER_MODULES. Each execution
appends one line (job id, attempt, kind) to the ledger file POISON_LEDGER with a single
O_APPEND write, the ground truth of how often each job ran."""
import os
import sys
import time
from decimal import Decimal

from django_pg_jobqueue.exceptions import JobCancelled, LeaseLost, PermanentError
from django_pg_jobqueue.registry import handler
from tests.handlers.appending import AppendedFile
from tests.utils import circular_dict, deeply_nested_list

OVERRUN_SECONDS = 3.6  # the `overruns_timeout` kind sleeps this long (its timeout: 1 s)

_LEDGER = AppendedFile("POISON_LEDGER")

HUGE_BYTES = 1024 * 1024 + 1  # just over the default JOB_MAX_RESULT_BYTES


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("this exception has no text")


class ReprRaises(Exception):
    def __str__(self):
        raise KeyboardInterrupt  # a BaseException from str() itself


class OwnBaseException(BaseException):
    pass


_circular = circular_dict
_deep = deeply_nested_list


def _raise(exc):
    raise exc


# kind -> (what the handler does, the final status expected, attempts: "one" or "all")
KINDS = {
    # ordinary jobs
    "ok": (lambda ctx: {"ok": True, "job": ctx.job_id}, "succeeded", "one"),
    # results that are stored once cleaned
    "result_nul": (lambda ctx: {"text": "a\x00b", "k\x00": ["\x00"]}, "succeeded", "one"),
    "result_surrogate": (lambda ctx: {"lone": "\ud800", "low": "x\udfff"}, "succeeded", "one"),
    "chatty": (lambda ctx: (ctx.progress(10, "p\x00\ud800"), ctx.log("l\x00", d="\udc00"),
                            {"ok": True})[-1], "succeeded", "one"),
    # results that cannot be stored: failed for good, at once
    "result_huge": (lambda ctx: "x" * HUGE_BYTES, "failed", "one"),
    "result_circular": (lambda ctx: _circular(), "failed", "one"),
    "result_deep": (lambda ctx: _deep(), "failed", "one"),
    "result_object": (lambda ctx: {"when": object()}, "failed", "one"),
    "result_set": (lambda ctx: {1, 2, 3}, "failed", "one"),
    "result_decimal": (lambda ctx: [Decimal("1.5")], "failed", "one"),
    "result_nan": (lambda ctx: {"x": float("nan")}, "failed", "one"),
    # exceptions: each attempt fails; retried until attempts are spent
    "raise_nul": (lambda ctx: _raise(RuntimeError("bad\x00")), "failed", "all"),
    "raise_surrogate": (lambda ctx: _raise(ValueError("\ud800 half")), "failed", "all"),
    "raise_unprintable": (lambda ctx: _raise(Unprintable()), "failed", "all"),
    "raise_str_base_exception": (lambda ctx: _raise(ReprRaises()), "failed", "all"),
    "raise_huge_message": (lambda ctx: _raise(RuntimeError("m" * 300_000)), "failed", "all"),
    "raise_json_type_error": (lambda ctx: _raise(
        TypeError("Object of type Decimal is not JSON serializable")), "failed", "all"),
    "system_exit": (lambda ctx: sys.exit(2), "failed", "all"),
    "keyboard_interrupt": (lambda ctx: _raise(KeyboardInterrupt()), "failed", "all"),
    "generator_exit": (lambda ctx: _raise(GeneratorExit()), "failed", "all"),
    "own_base_exception": (lambda ctx: _raise(OwnBaseException("mine")), "failed", "all"),
    "snooze_nan": (lambda ctx: ctx.snooze(float("nan")), "failed", "all"),
    "permanent": (lambda ctx: _raise(PermanentError("no\x00")), "failed", "one"),
    # a handler that raises the engine's own control-flow exceptions itself
    "raises_job_cancelled": (lambda ctx: _raise(JobCancelled("mine")), "failed", "one"),
    # ignores its timeout (enqueued with timeout_seconds=1): each attempt is timed out by the worker
    # Overruns its 1 s timeout by 2.6 s: the renewer, which enforces timeouts on its passes
    # (every lease / 3, 0.67 s here), gets at least two passes in before the handler returns.
    # A handler that returns within one pass of its timeout may still be recorded as it ended.
    "overruns_timeout": (lambda ctx: (time.sleep(OVERRUN_SECONDS), {"late": True})[-1],
                         "failed", "all"),
    # spurious LeaseLost: the worker drops the job; its lease expires and the reaper retries it
    "raises_lease_lost": (lambda ctx: _raise(LeaseLost(ctx.job_id, ctx.lease_token, "mine")),
                          "failed", "all"),
}
ORDINARY = "ok"


def _ledger(ctx, kind: str) -> None:
    _LEDGER.write(f"{ctx.job_id}\t{ctx.attempt}\t{kind}\t{time.time():.6f}\n")


@handler("poison", max_attempts=3, timeout_seconds=30,
         description="Property-test handler: payload.kind picks a hostile result or exception.")
def poison(ctx, payload):
    kind = payload["kind"]
    _ledger(ctx, kind)
    return KINDS[kind][0](ctx)


def read_ledger(path) -> dict[int, list[tuple[int, str]]]:
    """job id -> [(attempt, kind), ...] in the order they ran."""
    runs: dict[int, list[tuple[int, str]]] = {}
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        for line in f:
            job_id, attempt, kind, _ = line.rstrip("\n").split("\t")
            runs.setdefault(int(job_id), []).append((int(attempt), kind))
    return runs
