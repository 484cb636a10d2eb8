"""The dashboard's routes: its page at the prefix the host mounts, and every path below it.

The single-page app routes on the client (``jobs/42``, ``failed``, ``login``...), so each path
under the prefix answers the same page: a reload or a shared link of a client route works.
``reverse("django_pg_jobqueue_dashboard:page", kwargs={"path": "jobs/42"})`` links to one.
"""
from django.urls import path, re_path

from . import views

app_name = "django_pg_jobqueue_dashboard"

urlpatterns = [
    path("", views.dashboard, name="index"),
    re_path(r"^(?P<path>.+)$", views.dashboard, name="page"),
]
