"""Sphinx configuration: MyST Markdown, the furo theme, and the project's own directives
(docs/_ext/jobqueue_docs.py) that render the settings and the management commands from the
code. Django is set up with the demo project's settings so that autodoc and those
directives can import the package; nothing connects to the database."""
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path[:0] = [str(REPO / "backend"), str(DOCS / "_ext")]

# The demo settings start an embedded PostgreSQL when DATABASE_URL is unset; the docs never
# connect, so any URL will do.
os.environ.setdefault("DATABASE_URL", "postgres://docs@127.0.0.1:5432/docs")
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"

import django

django.setup()

project = "django-pg-jobqueue"
author = "The django-pg-jobqueue authors"
copyright = "the django-pg-jobqueue authors"
release = "0.1.0"
version = "0.1"

extensions = ["myst_parser", "sphinx.ext.autodoc", "jobqueue_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "pypi.md", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# Types from outside this package that the signatures name; there is no intersphinx (the
# docs build offline).
nitpick_ignore_regex = [
    ("py:class", r"(datetime|uuid|collections\.abc|typing|threading)\..*"),
    ("py:class", r"django_pg_jobqueue\.models\.(Job|JobBatch|QueueSetting|RateLimit|WorkerOverride)"),
    ("py:class", r"Job"),
    # Type aliases and type variables of the typed public API (not documented names).
    ("py:class", r"django_pg_jobqueue\.(registry\.HandlerFunc|tasks\.options\._T)"),
    # The worker's storage seam (engine.py), in JobContext's signature: internal, not documented.
    ("py:class", r"django_pg_jobqueue\.engine\.Engine"),
]

html_theme = "furo"
html_title = "django-pg-jobqueue"
# Only the stylesheets: docs/_static/bench holds figures that the pages include as images.
html_static_path = ["_static/css"]
html_css_files = ["layout.css"]
