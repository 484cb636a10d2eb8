"""Built-in handlers.

Deterministic ones that tests, benchmarks and smoke checks rely on: `noop`, `sleep`, `flaky`,
`fail`. And demo handlers that simulate real work: `email_send`, `payment_retry`,
`report_generate`.
"""
import random

from .exceptions import PermanentError
from .registry import handler


@handler("noop", description="Returns at once.", payload_example={})
def noop(ctx, payload):
    return {"ok": True}


@handler("sleep", description="Sleeps payload.seconds, reporting progress; stops when asked.",
         payload_example={"seconds": 5})
def sleep(ctx, payload):
    seconds = float(payload.get("seconds", 1))
    steps = max(1, min(20, int(seconds * 4)))
    for step in range(steps):
        if ctx.wait(seconds / steps):
            ctx.raise_if_should_stop()
        ctx.progress(int((step + 1) * 100 / steps), f"slept {(step + 1) * seconds / steps:.2f}s")
    return {"slept_seconds": seconds}


@handler("flaky", description="Fails its first payload.fail_times attempts, then succeeds.",
         payload_example={"fail_times": 2})
def flaky(ctx, payload):
    fail_times = int(payload.get("fail_times", 1))
    if ctx.attempt <= fail_times:
        raise RuntimeError(f"flaky: failing attempt {ctx.attempt} of the first {fail_times}")
    return {"succeeded_on_attempt": ctx.attempt}


@handler("fail", description="Always fails; payload.permanent=true fails without retrying.",
         payload_example={"permanent": False})
def fail(ctx, payload):
    if payload.get("permanent"):
        raise PermanentError(payload.get("message", "permanent failure requested"))
    raise RuntimeError(payload.get("message", "failure requested"))


@handler("email_send", max_attempts=5, timeout_seconds=30,
         description="Simulates sending an email: short, sometimes a transient SMTP error.",
         payload_example={"to": "ada@example.com", "subject": "Welcome"})
def email_send(ctx, payload):
    if "to" not in payload or "@" not in str(payload["to"]):
        raise PermanentError("payload.to must be an email address")
    ctx.wait(random.uniform(0.05, 0.4))
    if random.random() < 0.15:
        raise ConnectionError("SMTP 421: service not available, try again later")
    ctx.log(f"sent to {payload['to']}")
    return {"delivered_to": payload["to"], "message_id": f"<{ctx.job_id}.{ctx.attempt}@queue>"}


@handler("payment_retry", max_attempts=4, timeout_seconds=60,
         description="Simulates re-charging a card: declines are permanent, timeouts retry.",
         payload_example={"invoice_id": "inv_123", "amount_cents": 4200})
def payment_retry(ctx, payload):
    ctx.progress(10, "contacting the payment provider")
    ctx.wait(random.uniform(0.2, 1.0))
    roll = random.random()
    if roll < 0.1:
        raise PermanentError("card declined (do not retry)")
    if roll < 0.35:
        raise TimeoutError("payment provider timed out")
    ctx.progress(100, "charged")
    return {"invoice_id": payload.get("invoice_id"), "charged_cents": payload.get("amount_cents", 0),
            "idempotency_key": f"job-{ctx.job_id}"}


@handler("report_generate", max_attempts=3, timeout_seconds=300, queue="default",
         description="Simulates building a report in pages, with progress; honours cancel.",
         payload_example={"pages": 10})
def report_generate(ctx, payload):
    pages = max(1, min(1000, int(payload.get("pages", 10))))
    for page in range(1, pages + 1):
        if ctx.wait(random.uniform(0.2, 0.6)):
            ctx.raise_if_should_stop()
        ctx.progress(page * 100 // pages, f"rendered page {page}/{pages}")
    return {"pages": pages, "url": f"/reports/{ctx.job_id}.pdf"}
