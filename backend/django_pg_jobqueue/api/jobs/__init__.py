"""The jobs resource (/api/v1/jobs/ and /api/v1/job-types/), one concept a module:

    views.py        JobViewSet: the list, one job, delete, cancel, retry, rerun, a job's events
    serializers.py  a job as the API shows it (list, detail, the jobs an action returns)
    enqueue.py      POST jobs/ and jobs/bulk/: the input, idempotency keys, backpressure
    retry.py        POST jobs/retry/: the dead letter's bulk retry
    actions.py      POST jobs/actions/: any operator action on many jobs
    types.py        GET job-types/: the registered types and their defaults
    suggestions.py  GET jobs/suggestions/: distinct queues, types, concurrency keys by prefix
"""
