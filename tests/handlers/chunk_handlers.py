"""A chunk handler for real worker processes: each call is a line of the ledger file
JOB_TEST_CHUNK_CALLS names (its size), and the first job of each call on its first attempt
fails, alone (its item of the answer is an exception), while the rest succeed."""
from django_pg_jobqueue import RetryPolicy, handler
from tests.handlers.appending import AppendedFile

CALLS = AppendedFile("JOB_TEST_CHUNK_CALLS")
CHUNK_SIZE = 50


@handler("chunk_sum", chunk_size=CHUNK_SIZE, chunk_wait_seconds=0.5, max_attempts=3,
         retry_policy=RetryPolicy(delays_seconds=[0]))
def chunk_sum(ctxs, payloads):
    CALLS.write(f"{len(ctxs)}\n")
    answers: list[object] = []
    for ctx, payload in zip(ctxs, payloads, strict=True):
        if ctx.attempt == 1 and not any(isinstance(a, Exception) for a in answers):
            answers.append(RuntimeError(f"job {ctx.job_id}: the chunk's one failure"))
        else:
            answers.append({"n": payload["n"], "chunk_size": len(ctxs)})
    return answers
