"""What a task finds in its directories before it starts: artifacts fetched and templates
rendered (structs TaskArtifact.Validate, Template.Validate and Task.Validate's destinations)."""

from __future__ import annotations

import posixpath
import re

from drover.model.durations import format_duration
from drover.model.job import Task
from drover.model.taskfiles import (
    ARTIFACT_MODES,
    CHANGE_MODE_SCRIPT,
    CHANGE_MODE_SIGNAL,
    TEMPLATE_CHANGE_MODES,
    TaskArtifact,
    Template,
)
from drover.model.validation.places import at
from drover.template import check as check_template

# A template's perms: an octal mode of at most 12 bits (setuid, setgid, sticky and rwx x3).
_PERMS = re.compile(r"^[0-7]{1,4}$")
_ENV_REFERENCE = re.compile(r"\$\{[^}]*\}")
_CHECKSUM_SIZES = {"md5": 16, "sha1": 20, "sha256": 32, "sha512": 64}


def escapes_alloc_dir(dest: str) -> bool:
    """Whether a destination, taken from the task's directory, leads out of the alloc's (Nomad's
    escapingfs.PathEscapesAllocViaRelative: an absolute one is under the task's directory)."""
    path = posixpath.normpath(posixpath.join("task", dest.lstrip("/")))
    return path == ".." or path.startswith("../")


def task_files_at(where: str, task: Task) -> list[str]:
    """A task's artifacts and templates, each placed by its number; two templates may not
    render to the same destination."""
    out: list[str] = []
    for i, art in enumerate(task.artifacts, 1):
        out += at(f"{where}, artifact {i}", artifact_problems(art))
    destinations: dict[str, int] = {}
    for i, tmpl in enumerate(task.templates, 1):
        out += at(f"{where}, template {i}", template_problems(tmpl))
        if tmpl.dest_path in destinations:
            out.append(
                f"{where}: template {i} has the same destination as template {destinations[tmpl.dest_path]}"
            )
        else:
            destinations[tmpl.dest_path] = i
    return out


def artifact_problems(art: TaskArtifact) -> list[str]:
    out: list[str] = []
    if not art.getter_source:
        out.append("source must be specified")
    if art.getter_mode not in ("", *ARTIFACT_MODES):
        out.append(f"invalid artifact mode {art.getter_mode!r}; must be one of: {', '.join(ARTIFACT_MODES)}")
    if escapes_alloc_dir(art.relative_dest):
        out.append(f"destination {art.relative_dest!r} escapes the allocation directory")
    out += _checksum_problems(art.getter_options.get("checksum"))
    return out


def _checksum_problems(checksum: str | None) -> list[str]:
    """An artifact's `checksum` option, "type:hex"; one that names a variable is checked when
    it is fetched."""
    if checksum is None or _ENV_REFERENCE.search(checksum):
        return []
    kind, sep, value = checksum.strip().partition(":")
    if not checksum.strip():
        return ["checksum value cannot be empty"]
    if not sep or ":" in value:
        return [f'checksum must be given as "type:value"; got {checksum!r}']
    try:
        size = len(bytes.fromhex(value))
    except ValueError:
        return [f"invalid checksum: {value!r} is not hexadecimal"]
    if kind not in _CHECKSUM_SIZES:
        return [f"unsupported checksum type {kind!r} (expected one of {', '.join(_CHECKSUM_SIZES)})"]
    if size != _CHECKSUM_SIZES[kind]:
        return [f"invalid {kind} checksum: {size} bytes, expected {_CHECKSUM_SIZES[kind]}"]
    return []


def template_problems(tmpl: Template) -> list[str]:
    out: list[str] = []
    if not tmpl.source_path and not tmpl.embedded_tmpl:
        out.append("must specify a source path or have an embedded template (source or data)")
    if not tmpl.dest_path:
        out.append("must specify a destination for the template")
    elif escapes_alloc_dir(tmpl.dest_path):
        out.append(f"destination {tmpl.dest_path!r} escapes the allocation directory")
    if tmpl.change_mode not in TEMPLATE_CHANGE_MODES:
        out.append(
            f"invalid change mode {tmpl.change_mode!r}; must be one of the following: "
            f"{', '.join(TEMPLATE_CHANGE_MODES)}"
        )
    elif tmpl.change_mode == CHANGE_MODE_SIGNAL:
        if not tmpl.change_signal:
            out.append("must specify signal value when change mode is signal")
        if tmpl.envvars:
            out.append("cannot use signals with env var templates")
    elif tmpl.change_mode == CHANGE_MODE_SCRIPT and (
        tmpl.change_script is None or not tmpl.change_script.command
    ):
        out.append("must specify change script configuration (its command) when change mode is script")
    if tmpl.splay < 0:
        out.append(f"splay {format_duration(tmpl.splay)} must not be negative")
    if tmpl.perms and not _PERMS.match(tmpl.perms):
        out.append(f"perms {tmpl.perms!r} is not an octal file mode")
    wait = tmpl.wait
    if wait is not None and wait.min > wait.max > 0:
        out.append(f"wait min {format_duration(wait.min)} is greater than max {format_duration(wait.max)}")
    if tmpl.embedded_tmpl:
        # What Nomad's client would find only when the task starts: a template that does not
        # parse, or calls a function the renderer does not have.
        name = tmpl.dest_path or "data"
        out += check_template(tmpl.embedded_tmpl, tmpl.left_delim, tmpl.right_delim, name=name)
    return out
