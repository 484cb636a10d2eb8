from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand

# Published (README, `make run`): production refuses to start while this account opens with
# this password (demo/checks.py, demo.E001).
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password"


class Command(BaseCommand):
    help = ("Create the demo operator account (demo / demo-password) when no user exists, with "
            "the permissions to create, cancel and retry jobs. Used by `make run`; never in production.")

    def add_arguments(self, parser):
        parser.add_argument("--username", default=DEMO_USERNAME, help=f"default: {DEMO_USERNAME}")
        parser.add_argument("--password", default=DEMO_PASSWORD, help=f"default: {DEMO_PASSWORD}")

    def handle(self, *args, **opts):
        from django.conf import settings

        User = get_user_model()
        if getattr(settings, "PRODUCTION", not settings.DEBUG):
            self.stdout.write("production: no demo user created")
            return
        if User.objects.exists():
            self.stdout.write("users exist: no demo user created (make your own with "
                              "`python manage.py createsuperuser`)")
            return
        user = User.objects.create_user(opts["username"], password=opts["password"],
                                        is_staff=True)
        user.user_permissions.set(Permission.objects.filter(content_type__app_label="django_pg_jobqueue"))
        self.stdout.write(f"created demo operator {opts['username']} / {opts['password']}")
