"""A task's `template` blocks, as Nomad's template hook runs consul-template: each rendered
(drover.template) into its destination under the task's directory before the task starts
(owned by its `uid`/`gid` where the agent may give it away), its `env = true` ones into the
task's environment; the task waits while a variable a template reads does not exist yet
("Missing: ..."). Once the task runs, a change to a service or variable a template read renders
it again - a `once` template never, one with a `wait` once the data has been quiet for its
`min` (at most its `max`: drover.control.client.quiescence) - and, if its output changed,
applies its `change_mode` after a random `splay`: `restart` (any environment template changing
restarts too), `signal` with `change_signal`, `script`, or `noop`."""

from __future__ import annotations

import asyncio
import os
import random
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from drover.client.templatesources import Dep, TemplateSources
from drover.control.client.quiescence import Quiescence
from drover.control.client.templatedata import CachedData, parse_env_file
from drover.model.durations import SECOND
from drover.model.job import Task
from drover.model.taskfiles import Template
from drover.template import Call, render
from drover.template import TemplateError as DroverTemplateError

# What a template reads from Nomad (its env and files are the task's own).
NOMAD_KINDS = frozenset({"service", "services", "var", "varlist"})

CHANGE_RESTART = "restart"
CHANGE_SIGNAL = "signal"
CHANGE_SCRIPT = "script"
CHANGE_NOOP = "noop"


class TemplateError(Exception):
    """A template that cannot render (its error names the template and line): the task fails."""


@dataclass
class Rendered:
    template: Template
    destination: Path
    content: str


@dataclass
class Change:
    """What a re-render asks of the task: a restart, signals, scripts."""

    restart: bool = False
    signals: tuple[str, ...] = ()
    scripts: tuple[Template, ...] = ()


def destination(task_dir: Path, template: Template, index: int) -> Path:
    """Where a template is written: its `destination` under the task's directory (an absolute
    one too, as Nomad's sandbox keeps it there). Raises TemplateError for one leading out."""
    dest = template.dest_path or f"local/template-{index}"
    path = (task_dir / dest.lstrip("/")).resolve()
    if not path.is_relative_to(task_dir.resolve()):
        raise TemplateError(f"template destination {dest!r} is outside the task's directory")
    return path


class TaskTemplates:
    def __init__(
        self,
        task: Task,
        task_dir: Path,
        sources: TemplateSources,
        namespace: str,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.task = task
        self.task_dir = task_dir
        self.sources = sources
        self.namespace = namespace
        self.warn = warn  # a task event for what is not done as asked (an owner not given)
        self.rendered: dict[int, Rendered] = {}
        self.used: list[Dep] = []
        self._unowned: set[int] = set()  # templates whose uid/gid could not be set (warned once)

    def _text(self, template: Template) -> str:
        if template.embedded_tmpl or not template.source_path:
            return template.embedded_tmpl
        source = (self.task_dir / template.source_path.lstrip("/")).resolve()
        if not source.is_relative_to(self.task_dir.resolve()):
            raise TemplateError(f"template source {template.source_path!r} is outside the task's directory")
        try:
            return source.read_text()
        except OSError as e:
            raise TemplateError(f"template source {template.source_path!r}: {e.strerror}") from e

    def _read_file(self, path: str) -> str | None:
        try:
            return (self.task_dir / path).read_text() if not os.path.isabs(path) else Path(path).read_text()
        except OSError:
            return None

    def _render(
        self, index: int, template: Template, env: dict[str, str]
    ) -> tuple[str, list[Dep], list[Dep]]:
        """One template's output, what it read and what it lacks (its output is not written
        while it lacks anything)."""
        call = Call(
            env=env,
            read_file=self._read_file,
            now=datetime.now(UTC),
            nomad=CachedData(self.sources.values, self.namespace),
            namespace=self.namespace,
        )
        name = template.dest_path or f"template-{index}"
        try:
            out = render(
                self._text(template),
                call,
                name=name,
                left_delim=template.left_delim,
                right_delim=template.right_delim,
                missing_key_error=template.err_missing_key,
            )
        except TemplateError:
            raise
        except DroverTemplateError as e:  # worded as Go's, with the template's name and line
            raise TemplateError(str(e)) from e
        deps = [(d.kind, d.key) for d in out.used if d.kind in NOMAD_KINDS]
        missing = [(d.kind, d.key) for d in out.missing]
        return out.text, deps, missing

    async def render_all(
        self, env: dict[str, str], waiting: Callable[[list[Dep]], None], stop: asyncio.Event
    ) -> dict[str, str] | None:
        """Render every template, reading what they need, and write them; the variables the
        `env` ones add. Waits while one lacks data (`waiting` told what); None when stopped."""
        while not stop.is_set():
            outputs, missing = self._render_pass(env)
            unread = [d for d in self.used if d not in self.sources.values]
            if unread:  # read what the pass asked for, then render again with it
                await self.sources.ensure(unread)
                continue
            if not missing:
                for i, r in outputs.items():
                    self._write(i, r)
                    self.rendered[i] = r
                return self.env_vars()
            waiting(missing)
            await self.sources.changed(missing, stop)
        return None

    def _render_pass(self, env: dict[str, str]) -> tuple[dict[int, Rendered], list[Dep]]:
        """Every template's output but a `once` one's already rendered (what they read is
        watched; a once template's is not)."""
        outputs: dict[int, Rendered] = {}
        missing: list[Dep] = []
        used: list[Dep] = []
        for i, template in enumerate(self.task.templates):
            if template.once and i in self.rendered:
                continue
            out, deps, lacks = self._render(i, template, env)
            used += [d for d in deps if d not in used]
            missing += [d for d in lacks if d not in missing]
            if not lacks:
                outputs[i] = Rendered(template, destination(self.task_dir, template, i), out)
        self.used = used
        return outputs, missing

    def _write(self, index: int, r: Rendered) -> None:
        r.destination.parent.mkdir(parents=True, exist_ok=True)
        tmp = r.destination.with_name(f".{r.destination.name}.tmp")
        tmp.write_text(r.content)
        tmp.chmod(int(r.template.perms or "0644", 8))
        self._own(index, r.template, tmp)
        os.replace(tmp, r.destination)

    def _own(self, index: int, template: Template, path: Path) -> None:
        """Give the file to the template's uid/gid (a negative one, or none, is the agent's).
        Only root may give a file away: an agent that may not warns once and leaves it its own."""
        uid, gid = owner(template)
        if (uid, gid) == (-1, -1):
            return
        try:
            os.chown(path, uid, gid)
        except PermissionError:
            if index not in self._unowned:
                self._unowned.add(index)
                self.warn(
                    f"Template {template.dest_path or index} kept the agent's owner: only an agent "
                    f"running as root can give it uid {uid} gid {gid}"
                )

    def env_vars(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for r in self.rendered.values():
            if r.template.envvars:
                out.update(parse_env_file(r.content))
        return out

    async def watch(
        self, env: dict[str, str], stop: asyncio.Event, apply: Callable[[Change], Awaitable[None]]
    ) -> None:
        """Until `stop`: wait for what the templates read to change, render them again, write
        those whose output changed and apply their change modes. A template with a `wait`
        is held until the data has been quiet long enough (consul-template ticks each one's
        timer on every change)."""
        quiet = {
            i: Quiescence.of(t.wait)
            for i, t in enumerate(self.task.templates)
            if t.wait is not None and not t.once
        }
        while not stop.is_set():
            due = [q.due for q in quiet.values() if q.due is not None]
            timeout = max(0.0, (min(due) - time.monotonic_ns()) / SECOND) if due else None
            changed = await self.sources.changed(self.used, stop, timeout)
            now = time.monotonic_ns()
            if changed:
                for q in quiet.values():
                    q.tick(now)
            fired = {i for i, q in quiet.items() if q.fire(now)}
            if changed or fired:
                await self._rerender(env, set(quiet) - fired, apply)

    async def _rerender(
        self, env: dict[str, str], held: set[int], apply: Callable[[Change], Awaitable[None]]
    ) -> None:
        """Render again and write what changed, but the `held` templates (waiting for quiet);
        then apply the change modes of those written."""
        outputs, missing = self._render_pass(env)
        unread = [d for d in self.used if d not in self.sources.values]
        if unread:
            await self.sources.ensure(unread)
            outputs, missing = self._render_pass(env)
        if missing:
            return  # consul-template keeps the last output until the data is back
        change = Change()
        splay = 0
        for i, r in outputs.items():
            before = self.rendered.get(i)
            if i in held or (before is not None and before.content == r.content):
                continue
            self._write(i, r)
            self.rendered[i] = r
            splay = max(splay, r.template.splay)
            change = _merged(change, r.template)
        if change.restart or change.signals or change.scripts:
            if splay:
                await asyncio.sleep(random.uniform(0, splay / SECOND))
            await apply(change)


def _merged(change: Change, template: Template) -> Change:
    mode = template.change_mode or CHANGE_RESTART
    if template.envvars or mode == CHANGE_RESTART:
        return Change(True, change.signals, change.scripts)
    if mode == CHANGE_SIGNAL and template.change_signal:
        return Change(change.restart, (*change.signals, template.change_signal), change.scripts)
    if mode == CHANGE_SCRIPT and template.change_script is not None:
        return Change(change.restart, change.signals, (*change.scripts, template))
    return change


def owner(template: Template) -> tuple[int, int]:
    """The uid and gid a template's file is given (-1: left as it is), as Nomad's template
    hook hands them to consul-template."""
    uid = template.uid if template.uid is not None and template.uid >= 0 else -1
    gid = template.gid if template.gid is not None and template.gid >= 0 else -1
    return uid, gid


def missing_words(dep: Dep, region: str) -> str:
    """A missing dependency as Nomad's template hook names it ("nomad.var.block(app@default.global)")."""
    kind, key = dep
    if kind == "var":
        path, _, namespace = key.partition("@")
        return f"nomad.var.block({path}@{namespace or 'default'}.{region})"
    if kind == "varlist":
        return f"nomad.var.list({key})"
    if kind == "service":
        return f"nomad.service({key})"
    return f"{kind}({key})"


def script_command(template: Template) -> list[str]:
    script = template.change_script
    assert script is not None
    return [script.command, *script.args] if script.args else shlex.split(script.command)
