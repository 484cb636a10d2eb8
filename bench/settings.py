"""Settings for the benchmark's processes: the project's settings plus the bench-only app
(its `bench_stamp` handler records when a job starts, for the pickup-latency measurement)."""
from config.settings import *  # noqa: F401,F403
from config.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.benchapp"]

# Measured as deployed: no debug cursor wrapper recording every query.
DEBUG = False
