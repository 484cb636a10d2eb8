"""How a worker process (process.py) tells its supervisor (supervisor.py) why it exited.

Both codes mean: start another at once. Nothing of Django's is imported here: the supervisor
reads these before Django is set up in a spawned child.
"""
EXIT_RECYCLED = 3      # a planned recycle (--max-jobs-per-process, --max-memory-per-process)
EXIT_HARD_TIMEOUT = 4  # ended for a handler running past its timeout plus grace
