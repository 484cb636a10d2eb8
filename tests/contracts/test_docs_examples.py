"""The examples of docs/tutorial.md and docs/how-to/*.md, run against the project the tutorial
builds, on real PostgreSQL, in this test's transaction.

Every fenced block of those pages is read in page order. How a block is treated depends on its
language and on an optional mark, an HTML comment on the line just before its fence (invisible
in the built pages and on GitHub):

    <!-- example: skip REASON -->     not run; the reason is required and says why
    <!-- example: django>=6.0 -->     run only on that Django (two blocks, one per version: the
    <!-- example: django<6.0 -->      main virtualenv runs one, the Django 5.2 leg of
                                      `make test-lowest` / `make matrix` runs the other)
    <!-- example: in myapp/tasks.py -->   more of a file shown earlier on the page: appended
                                      to it, and the module imported again

Unmarked blocks, by language:

- python, by what the block is (its caption, or a first-line comment, naming a file):
  - settings (`settings.py`, or only UPPERCASE assignments): executed on a copy of the current
    settings and applied with override_settings; INSTALLED_APPS is merged (a block lists the
    apps it adds), DATABASES is left alone (the test's database is the project's).
  - `urls.py`: executed on startproject's urls.py (`urlpatterns` with the admin) and made
    ROOT_URLCONF.
  - another file (`myapp/handlers.py`, `myapp/models.py`, `myapp/tests/test_x.py`, ...):
    written into a fresh `myapp` package on sys.path (an installed app) and imported; a model
    module's tables are created; a test module's `test_*` functions are called, with the
    fixtures `db`, `settings`, `client` and `django_capture_on_commit_callbacks`.
  - anything else: executed in the page's namespace, shared by the page's blocks in order.
- console / bash: each command checked or run: `pip install` extras must exist;
  `python manage.py CMD ...` must name a command whose parser accepts the arguments (they are
  not run: migrate, runserver and run_job_workers would outlive the test); `curl` is sent
  through Django's test client to the tutorial's mount (`/queue/api/`) and must carry its
  `Authorization` header (`$TOKEN` is a superuser's token) and answer 2xx. Any other command
  fails the test until its block is marked.
- json: must parse (as a whole, or one value a line); yaml and ini: must parse; text and other languages: not examples.

Each how-to runs on the project the tutorial's settings and urls blocks build, so a REST
example answers at the tutorial's mount and a page's settings come on top of the tutorial's.
"""
import ast
import configparser
import contextlib
import copy
import importlib
import importlib.metadata
import inspect
import json
import re
import shlex
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import django
import pytest
import yaml
from asgiref.sync import async_to_sync
from django.conf import settings as django_settings
from django.core.management import get_commands, load_command_class
from django.db import connection, transaction
from django.test import Client, override_settings

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = [DOCS / "tutorial.md", *sorted((DOCS / "how-to").glob("*.md"))]
APP = "myapp"  # the pages' app, and their project's package:
PROJECT = "mysite"

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
MARK = re.compile(r"^<!--\s*example:\s*(?P<mark>.*?)\s*-->$")
PY_FILE = re.compile(r"^#?\s*(?P<path>[\w./]+\.py)\b")
STARTPROJECT_URLS = ("from django.contrib import admin\nfrom django.urls import path\n\n"
                     "urlpatterns = [path('admin/', admin.site.urls)]\n")


@dataclass
class Block:
    page: str
    line: int
    language: str
    caption: str
    code: str
    mark: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.language}{', ' + self.caption if self.caption else ''})"

    @property
    def file(self) -> str:
        """The file the block shows (caption or first-line comment), '' for a snippet."""
        for text in (self.caption, self.code.lstrip().split("\n", 1)[0]):
            match = PY_FILE.match(text.strip())
            if match:
                return match["path"]
        return ""


def blocks_of(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match or not match["info"].strip():
            i += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = lines[i + 1:end]
        directive = re.match(r"\{([\w-]+)\}\s*(.*)", info)
        if directive and directive[1] not in ("code-block", "code"):
            # Another directive ({image}, {note}): its own body may hold blocks.
            found += _nested(page, lines[i + 1:end], i + 1)
            i = end + 1
            continue
        words = (directive[2] if directive else info).split()
        language = words[0] if words else ""
        options = {}
        while body and body[0].startswith(":"):
            key, _, value = body.pop(0)[1:].partition(":")
            options[key.strip()] = value.strip()
        while body and not body[0].strip():
            body.pop(0)
        mark = ""
        previous = i - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        mark_match = MARK.match(lines[previous].strip()) if previous >= 0 else None
        if mark_match:
            mark = mark_match["mark"]
        found.append(Block(page.relative_to(DOCS).as_posix(), i + 1, language.lower(),
                           options.get("caption", ""), "\n".join(body) + "\n", mark))
        i = end + 1
    return found


def _nested(page: Path, lines: list[str], offset: int) -> list[Block]:
    if not any(FENCE.match(line) and FENCE.match(line)["info"].strip() for line in lines):
        return []
    text = "\n".join(lines)
    found = []
    fake = _InMemoryPage(page, text)
    for block in blocks_of(fake):  # type: ignore[arg-type]
        block.line += offset
        found.append(block)
    return found


class _InMemoryPage:
    def __init__(self, page: Path, text: str) -> None:
        self._page, self._text = page, text

    def read_text(self) -> str:
        return self._text

    def relative_to(self, other: Path) -> Path:
        return self._page.relative_to(other)


def django_matches(mark: str) -> bool:
    match = re.fullmatch(r"django\s*(>=|<)\s*(\d+)\.(\d+)", mark)
    assert match, f"unknown example mark {mark!r}"
    version = (int(match[2]), int(match[3]))
    return django.VERSION[:2] >= version if match[1] == ">=" else django.VERSION[:2] < version


def wanted(block: Block) -> bool:
    if block.mark.startswith("skip"):
        assert block.mark[4:].strip(), f"{block}: `example: skip` needs a reason"
        return False
    if block.mark and not block.mark.startswith("in "):
        return django_matches(block.mark)
    return True


# --- the project the pages build --------------------------------------------------------------
class Project:
    """The settings, URLs, app package and namespace the blocks build up, undone at the end."""

    def __init__(self, tmp_path: Path, stack: contextlib.ExitStack, settings_fixture) -> None:
        self.root = tmp_path
        tmp_path.mkdir(exist_ok=True)
        self.stack = stack
        self.settings_fixture = settings_fixture
        self.namespace: dict = {"__name__": "docs_example"}
        self.urlconf_count = 0
        for package in (APP, PROJECT):
            (tmp_path / package).mkdir()
            (tmp_path / package / "__init__.py").write_text("")
        # The project's settings module, for a page's `from mysite.settings import *`.
        (tmp_path / PROJECT / "settings.py").write_text("from config.settings import *  # noqa\n")
        sys.path.insert(0, str(tmp_path))
        stack.callback(self._forget)
        from django_pg_jobqueue import periodic
        from django_pg_jobqueue.registry import registry

        self.registry = registry
        self.handlers_before = {spec.name for spec in registry.all()}
        stack.callback(self._unregister)
        # A page's @periodic schedules go with its handlers (else `check` reports them, E201).
        stack.callback(periodic._declared.update, dict(periodic._declared))
        stack.callback(periodic._declared.clear)
        self.apply_settings({"INSTALLED_APPS": [*django_settings.INSTALLED_APPS, APP]})

    def _forget(self) -> None:
        sys.path.remove(str(self.root))
        for name in [n for n in sys.modules if n.split(".")[0] in (APP, PROJECT)
                     or n.startswith("docs_example_urls")]:
            del sys.modules[name]

    def _unregister(self) -> None:
        for spec in self.registry.all():
            if spec.name not in self.handlers_before:
                self.registry.unregister(spec.name)

    def apply_settings(self, values: dict) -> None:
        values = dict(values)
        values.pop("DATABASES", None)
        if "INSTALLED_APPS" in values:
            current = list(django_settings.INSTALLED_APPS)
            values["INSTALLED_APPS"] = current + [a for a in values["INSTALLED_APPS"] if a not in current]
        if values:
            self.stack.enter_context(override_settings(**values))

    # python
    def run_python(self, block: Block) -> None:
        path = block.file
        if block.mark.startswith("in "):
            path = block.mark[3:].strip()
            target = self.root / path
            assert target.exists(), f"{block}: {path} is not shown earlier on the page"
            return self.run_module(block, path, target.read_text() + "\n" + block.code)
        if path.endswith("urls.py"):
            return self.run_urls(block)
        if path.endswith(".py") and (path.rsplit("/", 1)[-1].startswith("settings")):
            return self.run_settings(block)
        if not path and is_settings_only(block.code):
            return self.run_settings(block)
        if path:
            return self.run_module(block, path)
        before = set(self.namespace)
        exec(compile(block.code, str(block), "exec"), self.namespace)
        self.run_tests(block, {n: self.namespace[n] for n in set(self.namespace) - before
                               if n.startswith("test")}, required=False)

    def run_settings(self, block: Block) -> None:
        with warnings.catch_warnings():  # reading every setting reads deprecated ones too
            warnings.simplefilter("ignore")
            before = {k: copy.deepcopy(getattr(django_settings, k)) for k in dir(django_settings)
                      if k.isupper() and k not in ("DATABASES",)}
        namespace = {**copy.deepcopy(before), "__name__": "docs_example_settings"}
        exec(compile(block.code, str(block), "exec"), namespace)
        changed = {k: v for k, v in namespace.items() if k.isupper() and before.get(k, object()) != v}
        self.apply_settings(changed)

    def run_urls(self, block: Block) -> None:
        self.urlconf_count += 1
        name = f"docs_example_urls_{self.urlconf_count}"
        module = type(sys)(name)
        exec(compile(STARTPROJECT_URLS + block.code, str(block), "exec"), module.__dict__)
        sys.modules[name] = module
        self.stack.enter_context(override_settings(ROOT_URLCONF=name))

    def run_module(self, block: Block, path: str, code: str = "") -> None:
        parts = path.split("/")
        if parts[0] not in (APP, PROJECT):
            pytest.fail(f"{block}: a file of the page is in {parts[0]!r}: the pages' app is "
                        f"{APP!r} and their project {PROJECT!r}")
        target = self.root.joinpath(*parts)
        for parent in list(target.parents):
            if parent == self.root:
                break
            parent.mkdir(exist_ok=True)
            if not (parent / "__init__.py").exists():
                (parent / "__init__.py").write_text("")
        target.write_text(code or block.code)
        name = path[:-3].replace("/", ".")
        importlib.invalidate_caches()
        sys.modules.pop(name, None)
        module = importlib.import_module(name)
        if parts[-1] == "models.py":
            self.create_tables(module)
        if parts[-1].startswith("test"):
            self.run_tests(block, vars(module))

    def create_tables(self, module) -> None:
        from django.db import models

        with connection.schema_editor() as editor:
            for value in vars(module).values():
                if (isinstance(value, type) and issubclass(value, models.Model)
                        and value.__module__ == module.__name__ and not value._meta.abstract):
                    editor.create_model(value)

    def run_tests(self, block: Block, names: dict, *, required: bool = True) -> None:
        """Call the block's test functions, each in a savepoint rolled back after it."""
        tests = [f for n, f in names.items() if n.startswith("test") and inspect.isfunction(f)]
        assert tests or not required, f"{block}: a test module with no test function"
        for test in tests:
            fixtures = {"db": None, "transactional_db": None, "settings": self.settings_fixture,
                        "client": Client(),
                        "django_capture_on_commit_callbacks": _capture_on_commit}
            wanted_fixtures = inspect.signature(test).parameters
            missing = [p for p in wanted_fixtures if p not in fixtures]
            assert not missing, f"{block}: {test.__name__} asks for fixtures {missing} the docs never define"
            arguments = {p: fixtures[p] for p in wanted_fixtures}
            with transaction.atomic():
                if inspect.iscoroutinefunction(test):
                    async_to_sync(test)(**arguments)
                else:
                    test(**arguments)
                transaction.set_rollback(True)

    # shell
    def run_shell(self, block: Block) -> None:
        for command in shell_commands(block):
            self.run_command(block, command)

    def run_command(self, block: Block, command: str) -> None:
        words = shlex.split(command, comments=True)
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words.pop(0)
        if not words:
            return
        if words[:2] == ["pip", "install"]:
            return check_pip_install(block, words[2:])
        if words[:2] == ["python", "manage.py"]:
            return check_manage_py(block, words[2:])
        if words[0] == "curl":
            return self.send_curl(block, words[1:])
        pytest.fail(f"{block}: no rule runs {command!r}; mark the block `<!-- example: skip REASON -->`")

    def send_curl(self, block: Block, args: list[str]) -> None:
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token

        method, headers, data, url = "GET", {}, None, None
        args = list(args)
        while args:
            arg = args.pop(0)
            if arg in ("-X", "--request"):
                method = args.pop(0)
            elif arg in ("-H", "--header"):
                key, _, value = args.pop(0).partition(":")
                headers[key.strip()] = value.strip()
            elif arg in ("-d", "--data", "--data-raw"):
                data = args.pop(0)
                method = "POST" if method == "GET" else method
            elif arg.startswith("-"):
                pass
            else:
                url = arg
        assert url, f"{block}: curl without a URL"
        path = re.sub(r"^https?://[^/]+|^\.\.\.", "", url)
        assert path.startswith("/queue/api/"), (
            f"{block}: {url} is not under the tutorial's mount /queue/api/")
        assert "Authorization" in headers, f"{block}: curl without an Authorization header"
        user = get_user_model().objects.filter(username="docs-admin").first() or \
            get_user_model().objects.create_superuser("docs-admin", password="docs-admin-pw-1")
        token, _ = Token.objects.get_or_create(user=user)
        headers["Authorization"] = headers["Authorization"].replace("$TOKEN", token.key)
        content_type = headers.pop("Content-Type", "application/json")
        response = Client().generic(method, path, data=data or "", content_type=content_type,
                                    headers=headers)
        assert response.status_code < 400, (
            f"{block}: {method} {path} answered {response.status_code}: {response.content[:500]!r}")
        self.namespace["last_response"] = response


def _capture_on_commit(**kwargs):
    from django.test import TestCase

    return TestCase.captureOnCommitCallbacks(**kwargs)


def is_settings_only(code: str) -> bool:
    tree = ast.parse(code)
    targets = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets += node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets.append(node.target)
        elif not isinstance(node, (ast.Import, ast.ImportFrom)):
            return False
    return bool(targets) and all(isinstance(t, ast.Name) and t.id.isupper() for t in targets)


def shell_commands(block: Block) -> list[str]:
    commands, pending = [], ""
    for line in block.code.splitlines():
        if block.language == "console":
            if not pending and not line.startswith("$ "):
                continue  # output
            line = line[2:] if not pending else line
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        commands.append(pending + line)
        pending = ""
    return [c for c in commands if c.strip() and not c.strip().startswith("#")]


def parse_json(code: str) -> None:
    try:
        json.loads(code)
    except json.JSONDecodeError:
        for line in code.splitlines():
            if line.strip():
                json.loads(line)


def check_pip_install(block: Block, args: list[str]) -> None:
    extras = importlib.metadata.metadata("django-pg-jobqueue").get_all("Provides-Extra") or []
    for arg in args:
        match = re.fullmatch(r"django-pg-jobqueue(?:\[(?P<extras>[\w,]+)\])?", arg)
        if match and match["extras"]:
            unknown = set(match["extras"].split(",")) - set(extras)
            assert not unknown, f"{block}: the package has no extra {sorted(unknown)}"


def check_manage_py(block: Block, args: list[str]) -> None:
    name, args = args[0], args[1:]
    commands = get_commands()
    assert name in commands, f"{block}: manage.py has no command {name!r}"
    command = load_command_class(commands[name], name)
    parser = command.create_parser("manage.py", name)
    parser.parse_args(args)  # a CommandError names what it refuses


# --- the tests ------------------------------------------------------------------------------------
def run_page(project: Project, blocks: list[Block], *, setup_only: bool = False) -> None:
    for block in blocks:
        if not wanted(block):
            continue
        if setup_only and not (block.language == "python" and (
                block.file.endswith(("settings.py", "urls.py")))):
            continue
        try:
            if block.language == "python":
                project.run_python(block)
            elif block.language in ("console", "bash", "shell", "sh"):
                project.run_shell(block)
            elif block.language == "json":
                parse_json(block.code)
            elif block.language == "yaml":
                list(yaml.safe_load_all(block.code))
            elif block.language == "ini":
                configparser.ConfigParser(strict=False, interpolation=None).read_string(block.code)
        except AssertionError:
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure names its block
            if isinstance(exc, pytest.fail.Exception):
                raise
            raise AssertionError(f"{block} failed: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_the_examples_of_the_page_run(page, db, tmp_path, settings):
    with contextlib.ExitStack() as stack:
        project = Project(tmp_path, stack, settings)
        if page.name != "tutorial.md":
            run_page(project, blocks_of(PAGES[0]), setup_only=True)
        run_page(project, blocks_of(page))


def test_a_broken_example_fails(tmp_path, db, settings):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```python\nfrom django_pg_jobqueue import enqueue\n"
                    "enqueue('', {})\n```\n")
    blocks = [Block("page.md", b.line, b.language, b.caption, b.code, b.mark)
              for b in blocks_of(_InMemoryPage(DOCS / "page.md", page.read_text()))]  # type: ignore[arg-type]
    with contextlib.ExitStack() as stack, pytest.raises(AssertionError, match=r"page.md:3"):
        run_page(Project(tmp_path / "p", stack, settings), blocks)


def _exception_names() -> list[str]:
    from django_pg_jobqueue import exceptions

    return [name for name, obj in vars(exceptions).items()
            if isinstance(obj, type) and issubclass(obj, BaseException)
            and obj.__module__ == exceptions.__name__]


def first_bare_exception_mentions(text: str) -> list[str]:
    """The exceptions of django_pg_jobqueue.exceptions whose first mention in `text` does not
    show where they come from: `django_pg_jobqueue.exceptions.X` (or `django_pg_jobqueue.X`)
    in prose, or an import of X from either."""
    bare = []
    for name in _exception_names():
        found = re.search(rf"(?<!\w){name}\b", text)
        qualified = re.search(rf"django_pg_jobqueue(\.exceptions)?\.{name}\b|"
                              rf"from django_pg_jobqueue(\.exceptions)? import [^\n]*\b{name}\b", text)
        if found and (qualified is None or qualified.start() > found.start()):
            bare.append(f"{name} (line {text.count(chr(10), 0, found.start()) + 1})")
    return bare


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_each_exception_a_page_names_is_first_named_with_its_import_path(page):
    assert first_bare_exception_mentions(page.read_text()) == []


def test_a_bare_first_mention_of_an_exception_is_found():
    assert first_bare_exception_mentions(
        "raises `LeaseLost`; later django_pg_jobqueue.exceptions.LeaseLost") == ["LeaseLost (line 1)"]
    assert first_bare_exception_mentions(
        "from django_pg_jobqueue import PermanentError, handler\n\nraise PermanentError") == []
