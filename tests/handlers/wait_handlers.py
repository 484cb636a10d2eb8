"""Handlers of the tests that wait for outcomes, and the waiting process those tests start.

Worker subprocesses import this module through JOB_EXTRA_HANDLER_MODULES. Run as a module
(`python -m tests.handlers.wait_handlers IDS_JSON THREADS`), it is a producer process: THREADS threads
wait, each for its share of the job ids in turn, and it prints one JSON document: every wait's
job id, result and wake time (time.time())."""
from django_pg_jobqueue.exceptions import PermanentError
from django_pg_jobqueue.registry import handler


@handler("wait_echo", description="Test handler: returns payload.value.")
def wait_echo(ctx, payload):
    return payload.get("value")


@handler("wait_decline", max_attempts=1, description="Test handler: fails for good.")
def wait_decline(ctx, payload):
    raise PermanentError("card declined")


def _main(ids_json: str, threads: int) -> None:
    import json
    import os
    import sys
    import threading
    import time

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                                    "backend"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connections

    from django_pg_jobqueue import waiting

    ids = json.loads(ids_json)
    waits: list[dict] = []

    def waiter(mine):
        for job_id in mine:
            result = waiting.wait(job_id, timeout=30)
            waits.append({"id": job_id, "result": result, "woke_at": time.time()})
        connections.close_all()

    workers = [threading.Thread(target=waiter, args=(ids[i::threads],)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    print(json.dumps({"waits": waits}))


if __name__ == "__main__":
    import sys

    _main(sys.argv[1], int(sys.argv[2]))
