from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench.benchapp"
    label = "bench"

    def ready(self):
        from . import handlers  # noqa: F401  (registers bench_stamp)
