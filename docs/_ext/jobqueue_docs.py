"""Reference pages rendered from the code, so that they cannot drift from it.

```{jobqueue-settings}
:summary:
```
    A table of every JOB_* setting: name, type, default.

```{jobqueue-settings}
```
    Every JOB_* setting, from the fields of `django_pg_jobqueue.conf.QueueConf`: name, type,
    default, the check that validates it, and its documentation (the field's metadata).

```{jobqueue-command} run_job_workers
```
    A management command of the package: its help and every option its argparse parser
    defines (Django's common options left out), with the library's defaults.
"""
import argparse
import types
import typing
from contextlib import contextmanager
from dataclasses import fields

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

APP = "django_pg_jobqueue"


@contextmanager
def library_defaults():
    """Hide the JOB_* values of the settings the docs are built with (the demo project's,
    read from the environment), so that every default shown is the library's."""
    from django.conf import settings
    from django.test import override_settings

    from django_pg_jobqueue import conf

    with override_settings():
        for f in fields(conf.QueueConf):
            if hasattr(settings, conf.PREFIX + f.name):
                delattr(settings, conf.PREFIX + f.name)
        yield


def type_name(f) -> str:
    if f.metadata.get("type_doc"):
        return f.metadata["type_doc"]
    tp = f.type
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return " or ".join("None" if a is type(None) else type_name_of(a)
                           for a in typing.get_args(tp))
    return type_name_of(tp)


def type_name_of(tp) -> str:
    return {float: "float (an int is fine)", int: "int", bool: "bool", str: "str",
            dict: "dict"}.get(tp, getattr(tp, "__name__", str(tp)))


def python_literal(value) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


class MarkdownDirective(SphinxDirective):
    """Renders generated MyST Markdown in place of the directive."""

    def render(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.env.docname), self.content_offset,
                                container, match_titles=True)
        return container.children


class SettingsDirective(MarkdownDirective):
    has_content = False
    option_spec: typing.ClassVar = {"summary": lambda arg: True}

    def run(self):
        from django_pg_jobqueue import conf

        by_group: dict[str, list] = {g: [] for g in conf.GROUPS}
        for f in fields(conf.QueueConf):
            by_group[f.metadata["group"]].append(f)
        if "summary" in self.options:
            lines = ["| Setting | Type | Default |", "| --- | --- | --- |"]
            for group in by_group.values():
                for f in group:
                    name = conf.PREFIX + f.name
                    lines.append(f"| [`{name}`](#{anchor(name)}) | {cell(type_name(f))} | "
                                 f"`{cell(python_literal(conf.default(name)))}` |")
            return self.render(lines)
        # (Sections parsed here attach to the page as they are parsed, so the summary, which
        # comes first, is a directive of its own.)
        lines = []
        for group, title in conf.GROUPS.items():
            lines += [f"## {title}", ""]
            for f in by_group[group]:
                name = conf.PREFIX + f.name
                lines += [f"({anchor(name)})=", f"### `{name}`", "",
                          f"**Type** {type_name(f)} · **Default** "
                          f"`{python_literal(conf.default(name))}`"
                          + (f" · **Checked by** `{f.metadata['check_id']}`"
                             if f.metadata["check_id"] else ""), "",
                          f.metadata["doc"], ""]
        return self.render(lines)


def anchor(setting: str) -> str:
    return "setting-" + setting.lower().replace("_", "-")


class CommandDirective(MarkdownDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        from django.core.management import load_command_class
        from django.core.management.base import BaseCommand

        name = self.arguments[0]
        with library_defaults():
            command = load_command_class(APP, name)
            parser = command.create_parser("manage.py", name)
        common = {a.dest for a in BaseCommand().create_parser("manage.py", name)._actions}
        formatter = parser._get_formatter()
        own = [a for a in parser._actions if a.dest not in common]
        usage = "python manage.py " + " ".join([name] + [usage_of(a) for a in own])
        lines = [f"## `{name}`", "", command.help, "", "```text", usage, "```", ""]
        if own:
            lines += ["| Option | Help |", "| --- | --- |"]
            for action in own:
                flags = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
                if action.option_strings and action.nargs != 0:
                    flags += f" `{action.metavar or action.dest.upper()}`"
                help_text = formatter._expand_help(action) if action.help else ""
                if (action.default not in (None, False, "", argparse.SUPPRESS)
                        and "default" not in help_text.lower()):
                    help_text += f" (default: `{action.default}`)"
                lines.append(f"| {flags} | {cell(help_text)} |")
            lines.append("")
        return self.render(lines)


def usage_of(action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return f"[{flag}]"
    return f"[{flag} {action.metavar or action.dest.upper()}]"


def setup(app):
    app.add_directive("jobqueue-settings", SettingsDirective)
    app.add_directive("jobqueue-command", CommandDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
