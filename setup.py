"""Packaging steps beyond pyproject.toml: the built dashboard is part of every wheel.

The React dashboard (frontend/) is built by Vite into the app's static files,
backend/django_pg_jobqueue/static/django_pg_jobqueue/dashboard/, which pyproject.toml lists
as package data. Building a wheel or an sdist makes sure it is there:

- built already and not older than its sources: used as it is;
- missing or stale, in a checkout with frontend/package.json and npm on PATH: built
  (`npm ci` when frontend/node_modules is missing, then `npm run build`);
- missing, and it cannot be built here: the build FAILS, saying why. A wheel never ships
  without the dashboard.

An sdist carries the built dashboard (MANIFEST.in), so a wheel builds from it without Node.
Editable installs (`pip install -e .`) skip all this: they use the source tree, where
`make ui` builds the dashboard and its page says so until then.
"""
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
FRONTEND = ROOT / "frontend"
BUILD_DIR = ROOT / "backend" / "django_pg_jobqueue" / "static" / "django_pg_jobqueue" / "dashboard"
BUILT_INDEX = BUILD_DIR / "index.html"
# What the build is made from: newer than the build means the build is stale.
SOURCES = ("src", "index.html", "package.json", "package-lock.json", "vite.config.ts", "tsconfig.json")


class DashboardNotBuilt(SystemExit):
    def __init__(self, why):
        super().__init__(
            "\nerror: the dashboard is not built, and a django-pg-jobqueue package without it "
            f"would be broken.\n  {why}\n  Missing: {BUILT_INDEX.relative_to(ROOT)}\n"
            "  Build it first (`make ui`, or `cd frontend && npm ci && npm run build`, which "
            "needs Node.js and npm), or build the wheel from an sdist that carries it.\n")


def _newest_source_mtime():
    newest = 0.0
    for name in SOURCES:
        path = FRONTEND / name
        files = path.rglob("*") if path.is_dir() else [path]
        for file in files:
            if file.is_file():
                newest = max(newest, file.stat().st_mtime)
    return newest


def _npm(*args):
    print(f"dashboard: npm {' '.join(args)} (in {FRONTEND})", flush=True)
    subprocess.run([shutil.which("npm"), *args], cwd=FRONTEND, check=True)


def ensure_dashboard_built():
    """Build the dashboard when it is missing or older than its sources; fail when it cannot be."""
    have_sources = (FRONTEND / "package.json").is_file()
    have_npm = shutil.which("npm") is not None
    if BUILT_INDEX.is_file():
        if not (have_sources and have_npm):
            return  # an sdist (or a checkout without Node) with its build: use it
        if BUILT_INDEX.stat().st_mtime >= _newest_source_mtime():
            return
        print("dashboard: the build is older than frontend/: rebuilding", flush=True)
    elif not have_sources:
        raise DashboardNotBuilt("This source tree has no frontend/ to build it from.")
    elif not have_npm:
        raise DashboardNotBuilt("npm is not on PATH, so frontend/ cannot be built here.")
    try:
        if not (FRONTEND / "node_modules").is_dir():
            _npm("ci", "--no-audit", "--no-fund")
        _npm("run", "build")
    except subprocess.CalledProcessError as error:
        raise DashboardNotBuilt(f"`npm {' '.join(error.cmd[1:])}` failed (exit {error.returncode}).")
    if not BUILT_INDEX.is_file():
        raise DashboardNotBuilt("`npm run build` finished but wrote no index.html.")


class BuildPyWithDashboard(build_py):
    def run(self):
        if not getattr(self, "editable_mode", False):
            ensure_dashboard_built()
            # The package-data globs may have been expanded before the UI existed.
            self.__dict__.pop("data_files", None)
        super().run()


class SdistWithDashboard(sdist):
    def run(self):
        ensure_dashboard_built()
        super().run()


setup(cmdclass={"build_py": BuildPyWithDashboard, "sdist": SdistWithDashboard})
