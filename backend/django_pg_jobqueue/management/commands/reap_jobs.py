from django.core.management.base import BaseCommand

from django_pg_jobqueue import services


class Command(BaseCommand):
    help = "Requeue (or fail) running jobs whose lease expired, once, and print the counts."

    def handle(self, *args, **opts):
        counts = services.reap()
        self.stdout.write(f"reaped: {counts or 'nothing expired'}")
