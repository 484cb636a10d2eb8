"""The demo project's production check: no start while the demo account opens with its
published password (`ensure_demo_user` creates demo / demo-password in development; a database
carried over to production would keep it).

It runs with every `manage.py check` (and `migrate`, which checks before it migrates: the
docker-compose API service runs `migrate` before gunicorn) when DJANGO_ENV=production. It needs
the database; when the database cannot be reached it cannot tell and says nothing (`migrate`
then fails on its own).
"""
from django.conf import settings
from django.core import checks
from django.db import DatabaseError

from .management.commands.ensure_demo_user import DEMO_PASSWORD, DEMO_USERNAME


@checks.register(checks.Tags.security)
def check_demo_user(app_configs=None, **kwargs):
    if not getattr(settings, "PRODUCTION", False):
        return []
    from django.contrib.auth import get_user_model

    User = get_user_model()
    try:
        user = User._default_manager.filter(**{User.USERNAME_FIELD: DEMO_USERNAME}).first()
    except DatabaseError:
        return []
    if user is None or not user.is_active or not user.check_password(DEMO_PASSWORD):
        return []
    return [checks.Error(
        f"production: the demo user {DEMO_USERNAME!r} can still log in with the published "
        f"password {DEMO_PASSWORD!r} (and holds every job permission).",
        hint=f"Give it a password of its own (python manage.py changepassword {DEMO_USERNAME}), "
             f"deactivate it, or delete it.",
        obj=user, id="demo.E001")]
