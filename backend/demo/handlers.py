"""The demo's handlers: simulations of real work, with random delays and failures.

`email_send`, `payment_retry` and `report_generate` stand in for a real project's handlers; the
demo also offers the library's deterministic ones (`noop`, `sleep`, `flaky`, `fail`).
"""
import random

from django_pg_jobqueue import (
    PermanentError,
    builtin_handlers,  # noqa: F401  (registers noop, sleep, flaky, fail)
    handler,
)


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
