# Two commands: `make run` brings the whole system up, `make test` runs the whole suite.
# Both do all the set-up first: virtualenv, install, the embedded PostgreSQL when
# DATABASE_URL is unset, migrations, the UI build.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The newest Python >= 3.10 found (pyenv installs included): the repository's own tools (the
# docs, the benchmark) want 3.12+, which the newest usually is; the library runs on 3.10+.
PYTHON ?= $(shell for p in python3.13 python3.12 $(HOME)/.pyenv/versions/3.13*/bin/python3 $(HOME)/.pyenv/versions/3.12*/bin/python3 python3.11 python3.10 $(HOME)/.pyenv/versions/3.11*/bin/python3 $(HOME)/.pyenv/versions/3.10*/bin/python3 python3; do \
	if command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then command -v $$p; break; fi; done)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
THREADS ?= 4
HAS_UI := $(wildcard frontend/package.json)
# Where `npm run build` writes the dashboard (frontend/vite.config.ts): package data of the app.
UI_BUILD := backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard


.PHONY: static
.PHONY: chromium pgbouncer hey python-lowest which-python venv lint
PHONY_MATRIX := matrix test-lowest
.PHONY: $(PHONY_MATRIX)
.PHONY: help run test test-backend test-frontend test-e2e chaos chaos-3 bench pressure soak diagrams migrate ui \
        db-start db-stop demo-user schema clean docs

help:
	@echo "make run     start the database, API (http://127.0.0.1:$(PORT)/) and a worker pool"
	@echo "make test    run the whole suite (backend, UI unit tests, browser end-to-end)"
	@echo "make matrix  the wheel with Django 5.2 / 6.0 / 6.1 on each installed Python 3.10-3.13"
	@echo "             (MATRIX_DATABASE_URL=postgres://...: against that server, e.g. a PostgreSQL 15)"
	@echo "make chaos   full-size chaos drain (CHAOS_SEED=..., three seeds: make chaos-3)"
	@echo "make bench   benchmark against PgQueuer, Procrastinate, django-tasks-db, graphile-worker (Node.js),"
	@echo "             Oban for Python, Celery (BENCH_QUICK=1: faster; BENCH_SYSTEMS=...: some only)"
	@echo "make capacity  throughput and connections with 1, 2 and 3 shards (CAPACITY_QUICK=1: small)"
	@echo "make curves  cost curves as the work grows, SVG charts for the docs (CURVES_QUICK=1: small)"
	@echo "make soak    30-minute soak at half the maximum rate, pruning on (SOAK_MINUTES=...)"
	@echo "make pressure  1,000 jobs/s for 10 min while a snapshot is held from minute 2 to 7, ours"
	@echo "             and PgQueuer side by side (PRESSURE_MINUTES, PRESSURE_RATE, PRESSURE_HOLD_FROM,"
	@echo "             PRESSURE_HOLD_UNTIL, PRESSURE_SAMPLE_SECONDS, PRESSURE_SYSTEMS)"
	@echo "make profile where a drained job's CPU goes (worker vs PostgreSQL, per schema part)"
	@echo "make fleet   what 1, 4, 12, 24 worker processes cost PostgreSQL idle and on a trickle"
	@echo "make diagrams  render assets/*.svg from their sources"
	@echo "make docs    build the documentation site into docs/_build/html (warnings are errors)"
	@echo "make db-stop stop the embedded PostgreSQL"

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.10+ is required (none found on PATH)"; exit 1; }
	@echo "==> virtualenv with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]' --group dev --group docs
	@touch $@

venv: $(VENV)/.installed

db-start: venv
	@if [ -z "$$DATABASE_URL" ]; then $(PY) backend/config/embedded_pg.py start; else echo "using DATABASE_URL"; fi

db-stop: venv
	$(PY) backend/config/embedded_pg.py stop

migrate: db-start
	$(PY) manage.py migrate --no-input

frontend/node_modules/.installed: frontend/package.json frontend/package-lock.json
	cd frontend && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
	@touch $@

# The dashboard, built into $(UI_BUILD) (served by django_pg_jobqueue.dashboard's view).
ui:
ifneq ($(HAS_UI),)
	$(MAKE) frontend/node_modules/.installed
	cd frontend && npm run build
else
	@echo "(no frontend yet)"
endif

demo-user: migrate
	$(PY) manage.py ensure_demo_user

static: venv
	$(PY) manage.py collectstatic --no-input -v 0

run: venv ui migrate demo-user static
	@echo
	@echo "  Dashboard   http://127.0.0.1:$(PORT)/"
	@echo "  API docs    http://127.0.0.1:$(PORT)/api/docs/"
	@echo "  Admin       http://127.0.0.1:$(PORT)/admin/"
	@echo "  Metrics     http://127.0.0.1:$(PORT)/metrics"
	@echo "  Log in as   demo / demo-password (created when the database has no user yet)"
	@echo
	@trap 'kill 0' EXIT; \
	$(VENV)/bin/gunicorn config.wsgi --chdir backend -c backend/config/gunicorn.py --bind 127.0.0.1:$(PORT) & \
	$(PY) manage.py run_job_workers --threads $(THREADS) & \
	wait

test-backend: venv ui migrate
	$(PY) -m pytest -q

test-frontend: ui
ifneq ($(HAS_UI),)
	cd frontend && npm test && npm run lint && npm run format:check
endif

# ruff's chosen rules (pyproject.toml [tool.ruff.lint]) over the library, the demo, the tests,
# the benchmark and the docs' extension; vulture for dead code in backend/ at 80% confidence
# (vulture_whitelist.py: the names Django and its friends call for us); mypy over the package and
# a typed sample of caller code (pyproject.toml [tool.mypy]); import-linter's layers contract
# (pyproject.toml [tool.importlinter]: each layer imports only from those below); pylint's duplicate-code check
# (six or more repeated lines across the package's files; within one file, run `duplicates`).
lint: venv
	$(VENV)/bin/ruff check backend tests bench docs noxfile.py
	$(PY) -m vulture backend vulture_whitelist.py --min-confidence 80 --exclude '*/migrations/*'
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pylint --disable=all --enable=duplicate-code --min-similarity-lines=6 \
		--ignore=migrations --ignore-imports=y --ignore-signatures=y --ignore-docstrings=y \
		--ignore-comments=y --score=n backend/django_pg_jobqueue

# The browser tests need Debian's Chromium: installed here when root with apt-get, otherwise
# stop at once with the command to run.
CHROMIUM_PATH ?= $(shell command -v chromium 2>/dev/null || echo /usr/bin/chromium)
export CHROMIUM_PATH
chromium:
	@if [ -x "$(CHROMIUM_PATH)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "==> installing Chromium from Debian for the browser tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
			|| { echo "could not install Chromium; run: sudo apt-get install -y chromium"; exit 1; }; \
	else \
		echo "The browser tests need Chromium at $(CHROMIUM_PATH). Install it with:"; \
		echo "    sudo apt-get install -y chromium     (Debian/Ubuntu)"; \
		echo "or point CHROMIUM_PATH at a Chromium or Chrome binary, then run make test again."; \
		exit 1; \
	fi

# The pooler tests (tests/system/test_pgbouncer.py) need Debian's PgBouncer: installed here when root
# with apt-get; otherwise those tests skip, naming the command.
pgbouncer:
	@if command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "==> installing PgBouncer from Debian for the pooler tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null) \
			|| echo "could not install PgBouncer (the pooler tests will skip); run: sudo apt-get install -y pgbouncer"; \
	else \
		echo "PgBouncer not found: the pooler tests will skip. Install it with:"; \
		echo "    sudo apt-get install -y pgbouncer     (Debian/Ubuntu)"; \
	fi

# The API figures of `make bench` need a load generator, Debian's hey: installed here when
# root with apt-get; otherwise the report skips the API and names the command.
hey:
	@if command -v hey >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "==> installing hey from Debian for the API benchmark"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hey >/dev/null) \
			|| echo "could not install hey (the API figures will be skipped); run: sudo apt-get install -y hey"; \
	else \
		echo "hey not found: the API figures will be skipped. Install it with:"; \
		echo "    sudo apt-get install -y hey     (Debian/Ubuntu)"; \
	fi

# Playwright's runner (frontend/playwright.config.ts) on Debian's Chromium: its global setup
# starts the backend (a scratch database beside DATABASE_URL's, runserver on E2E_PORT or a free
# port, a worker pool) and stops it at the end. Traces of failed tests, the HTML report and
# every page's screenshots land in frontend/test-results/.
test-e2e: chromium venv ui migrate
ifneq ($(HAS_UI),)
	$(MAKE) frontend/node_modules/.installed
	cd frontend && npx playwright test
endif

# The lowest supported pair's Python (make test-lowest), looked for before anything else runs:
# on PATH or among pyenv's installs.
python-lowest:
	@if command -v python3.10 >/dev/null 2>&1 || ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.10*/bin/python3 >/dev/null 2>&1; then exit 0; fi; \
	echo "make test runs the lowest supported pair (Django 5.2 on Python 3.10) and needs Python 3.10. Install it with:"; \
	echo "    pyenv install 3.10     (or your system's python3.10 package)"; \
	echo "then run make test again."; \
	exit 1

# Which Python the main virtualenv runs (PYTHON=... picks another for a new .venv; an existing
# .venv keeps the one it was made with: `make clean` first to switch).
which-python: venv
	@echo "==> the main virtualenv runs $$($(PY) -c 'import sys, platform; print(platform.python_implementation(), platform.python_version(), "from", sys._base_executable)')"

test: python-lowest which-python chromium pgbouncer lint docs test-backend test-lowest test-frontend test-e2e
	@echo "==> make test passed with $$($(PY) -c 'import platform; print("Python", platform.python_version())')"

# The support matrix (noxfile.py): the wheel with Django 5.2, 6.0 and 6.1 on each installed
# Python it supports, each running the engine, Tasks, API and adoption tests. Virtualenvs
# live under /tmp (NOX_ENVDIR); a Python that is not installed here is skipped. The legs run
# on the embedded PostgreSQL 18, or on MATRIX_DATABASE_URL's server when it is set (NOX_ARGS:
# e.g. -s tests-3.10-django5.2 for one leg). The adoption test drives the dashboard in Debian's Chromium
# (the chromium target installs it when root, or names the command).
matrix: chromium venv ui db-start
	$(VENV)/bin/nox $(NOX_ARGS)

# The lowest pair (Django 5.2 on Python 3.10) on its quick subset, inside `make test`: a
# missing Python 3.10 fails it rather than skipping.
test-lowest: venv db-start
	$(VENV)/bin/nox -s tests-3.10-django5.2 --error-on-missing-interpreters -- quick

chaos: venv migrate
	CHAOS_FULL=1 $(PY) -m pytest -q -m slow tests/system/test_chaos.py -s

# The full drain with three different seeds in a row (each seed is printed; CHAOS_SEED replays one).
chaos-3: venv migrate
	@for i in 1 2 3; do \
		CHAOS_FULL=1 $(PY) -m pytest -q -m slow tests/system/test_chaos.py -s || exit 1; \
	done

# The hostile-handler property tests, long (POISON_EXAMPLES=... examples, default 60; the
# connection-hygiene one HYGIENE_EXAMPLES, default 40).
.PHONY: poison
poison: venv migrate
	POISON_FULL=1 $(PY) -m pytest -q -m slow tests/system/test_poison_property.py tests/system/test_handler_connection_hygiene.py -s

# 30 minutes at half the maximum rate with pruning on (SOAK_MINUTES=2 for a smoke run); the
# chart of a full run goes to docs/_static/bench/soak.svg. Not part of `make test`.
soak: venv migrate
	SOAK=1 $(PY) -m pytest -q -m slow tests/system/test_soak.py -s

bench: venv migrate hey
	$(PY) bench/run.py
	$(PY) bench/processes.py

# A steady stream while another session holds a snapshot open, ours and PgQueuer side by side
# (bench/pressure.py: 1,000 jobs/s for 10 minutes, the snapshot held from minute 2 to 7; ~25 min
# for both). Results in bench/results/pressure-<server>.txt. Not part of `make test`.
pressure: venv migrate
	$(PY) bench/pressure.py

# CPU-bound handlers: --processes 2 vs --processes 1 at the same total threads.
bench-processes: venv migrate
	$(PY) bench/processes.py

# What many worker processes cost one PostgreSQL (bench/fleet.py): idle transactions/s,
# connections, claims and transactions per trickled job, pickup p95, for 1, 4, 12 and 24
# processes (~6 min; FLEET_QUICK=1: 1 and 4 processes, ~1.5 min). Not part of `make test`.
.PHONY: fleet
fleet: venv db-start
	$(PY) bench/fleet.py $(if $(FLEET_QUICK),--quick)

# Shards' capacity (bench/shards.py): 1, then 2, then 3 throwaway clusters (a database of
# JOB_SHARDS each, the embedded PostgreSQL's binaries): enqueue through the router, drain
# jobs/s, CPU per job and connections per cluster, load average beside each (~3 min on 2
# loaded cores; CAPACITY_QUICK=1: 2,000 jobs a database, about 1 min). Not part of `make test`.
.PHONY: capacity
capacity: venv
	$(PY) bench/shards.py $(if $(CAPACITY_QUICK),--quick)

# Drain rate and claim p99 as finished rows, backlog, queues and scheduled jobs grow (bench/
# curves.py; ~25-40 min on 2 cores, CURVES_QUICK=1 for sizes / 100); charts into
# docs/_static/bench/.
# Where a drained job's CPU goes: the worker processes against PostgreSQL, and what the foreign
# key and the listing's and feed's indexes cost (bench/drain_profile.py; ~5 min; PYSPY=file
# also samples one worker with py-spy).
.PHONY: profile
profile: venv db-start
	$(PY) bench/drain_profile.py $(if $(PYSPY),--py-spy $(PYSPY))

.PHONY: curves
curves: venv db-start
	$(PY) bench/curves.py

# The API's schema as /api/schema/ serves it (its own drf-spectacular settings:
# django_pg_jobqueue.api.openapi), then the dashboard's types from it.
schema: venv
	$(PY) manage.py jobqueue_api_schema --file frontend/openapi.yaml --validate --fail-on-warn
ifneq ($(HAS_UI),)
	$(MAKE) frontend/node_modules/.installed
	cd frontend && npm run gen:api
endif

diagrams:
	$(MAKE) -C assets

docs: venv
	$(PY) -m sphinx -E -W --keep-going -n -b html docs docs/_build/html

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist $(UI_BUILD) backend/staticfiles build dist
