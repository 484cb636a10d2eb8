"""The dashboard: the React single-page app, built into this package's static files.

Mount it at any prefix with ``path("queue/", include("django_pg_jobqueue.dashboard.urls"))``,
next to the API (``include("django_pg_jobqueue.api.urls")``, at a prefix of its own).
"""
