"""A handler for the concurrency key tests' worker subprocesses: it records when its handler
body starts and ends (two `log` events, on the database clock), so that a test can check from
the events alone which jobs of a key ran at the same time."""
from django_pg_jobqueue import handler


@handler("key_probe", max_attempts=5, timeout_seconds=120,
         description="Logs 'start', waits payload.seconds (a minute on its first attempt with "
                     "payload.hang_first_attempt), logs 'end'.")
def key_probe(ctx, payload):
    ctx.log("start")
    seconds = float(payload.get("seconds", 0.05))
    if payload.get("hang_first_attempt") and ctx.attempt == 1:
        seconds = 60.0
        print(f"key_probe: job={ctx.job_id} hangs", flush=True)  # for a test of this process
    if ctx.wait(seconds):
        ctx.raise_if_should_stop()
    ctx.log("end")
    return {"ok": True}
