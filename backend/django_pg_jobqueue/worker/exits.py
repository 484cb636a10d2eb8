"""How a worker process says why it exited: the exit statuses worker/process.py ends with and
worker/supervisor.py reads. Both mean: start another at once. Imports nothing (a spawned
child imports the supervisor, and so this, before Django is set up)."""

EXIT_RECYCLED = 3      # a planned recycle (--max-jobs-per-process, --max-memory-per-process)
EXIT_HARD_TIMEOUT = 4  # ended for a handler running past its timeout plus grace
