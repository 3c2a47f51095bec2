"""A job Diff (Nomad's JSON, as `/v1/job/:id/plan` answers it) printed as `nomad job plan`
prints it: `+` added, `-` deleted, `+/-` edited, the job, its task groups (with the plan's
update counts) and tasks (with their annotations), fields and blocks aligned under them.
Unchanged tasks and blocks are named without a marker; an added or deleted group's or task's
contents show only with `verbose`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

Diff = Mapping[str, Any]

_MARKERS = {"Added": "+", "Deleted": "-", "Edited": "+/-"}
# ANSI colours, as Nomad colours its plan (with `color`).
_RESET = "\x1b[0m"
_COLOURS = {
    "green": "\x1b[32m", "red": "\x1b[31m", "yellow": "\x1b[33m", "light_yellow": "\x1b[93m",
    "cyan": "\x1b[36m", "blue": "\x1b[34m", "bold": "\x1b[1m",
}  # fmt: skip
_MARKER_COLOURS = {"Added": "green", "Deleted": "red", "Edited": "light_yellow"}
_UPDATE_COLOURS = {
    "create": "green", "destroy": "red", "migrate": "blue", "in-place update": "cyan",
    "create/destroy update": "yellow", "canary": "light_yellow",
}  # fmt: skip
_ANNOTATION_COLOURS = {
    "forces create": "green", "forces destroy": "red", "forces in-place update": "cyan",
    "forces create/destroy update": "yellow",
}  # fmt: skip


class _Painter:
    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, colour: str | None) -> str:
        if not self.color or colour is None:
            return text
        return f"{_COLOURS[colour]}{text}{_RESET}"

    def marker(self, kind: str) -> str:
        """The marker and its space ("" for None), and how wide it prints."""
        m = _MARKERS.get(kind)
        return "" if m is None else self.paint(m, _MARKER_COLOURS[kind]) + " "

    def annotations(self, notes: Sequence[str]) -> str:
        return ", ".join(self.paint(n, _ANNOTATION_COLOURS.get(n)) for n in notes)


def _width(kind: str) -> int:
    m = _MARKERS.get(kind)
    return 0 if m is None else len(m) + 1


def _list(d: Diff, key: str) -> Sequence[Diff]:
    return d.get(key) or ()


def format_diff(diff: Diff, verbose: bool = False, color: bool = False) -> str:
    """The diff as `nomad job plan` prints it (ANSI colours with `color`)."""
    p = _Painter(color)
    out = p.marker(diff["Type"]) + p.paint(f"Job: {_quote(diff['ID'])}", "bold") + "\n"
    fields, objects = _list(diff, "Fields"), _list(diff, "Objects")
    groups = _list(diff, "TaskGroups")
    longest_field, longest_marker = _longest(fields, objects)
    longest_marker = max([longest_marker, *(_width(g["Type"]) for g in groups)])
    if diff["Type"] == "Edited" or verbose:
        block = _aligned(p, fields, objects, 0, longest_field, longest_marker)
        out += block + ("\n" if block else "")
    for group in groups:
        out += _group(p, group, longest_marker - _width(group["Type"]), verbose) + "\n"
    return out


def _group(p: _Painter, tg: Diff, pad: int, verbose: bool) -> str:
    out = p.marker(tg["Type"]) + " " * pad + p.paint(f"Task Group: {_quote(tg['Name'])}", "bold")
    updates = tg.get("Updates") or {}
    if updates:
        counts = [p.paint(f"{updates[k]} {k}", _UPDATE_COLOURS.get(k)) for k in sorted(updates)]
        out += f" ({', '.join(counts)})"
    out += "\n"
    fields, objects, tasks = _list(tg, "Fields"), _list(tg, "Objects"), _list(tg, "Tasks")
    longest_field, longest_marker = _longest(fields, objects)
    longest_marker = max([longest_marker, *(_width(t["Type"]) for t in tasks)])
    start = pad + 2
    if tg["Type"] == "Edited" or verbose:
        block = _aligned(p, fields, objects, start, longest_field, longest_marker)
        out += block + ("\n" if block else "")
    for task in tasks:
        out += _task(p, task, start, longest_marker - _width(task["Type"]), verbose) + "\n"
    return out


def _task(p: _Painter, task: Diff, start: int, pad: int, verbose: bool) -> str:
    out = " " * start + p.marker(task["Type"]) + " " * pad + p.paint(f"Task: {_quote(task['Name'])}", "bold")
    if task.get("Annotations"):
        out += f" ({p.annotations(task['Annotations'])})"
    if task["Type"] == "None" or (task["Type"] in ("Added", "Deleted") and not verbose):
        return out
    fields, objects = _list(task, "Fields"), _list(task, "Objects")
    longest_field, longest_marker = _longest(fields, objects)
    return out + "\n" + _aligned(p, fields, objects, start + 2, longest_field, longest_marker)


def _object(p: _Painter, obj: Diff, start: int, pad: int) -> str:
    name: str = obj["Name"]
    out = " " * start + p.marker(obj["Type"]) + " " * pad + name + " {\n"
    fields, objects = _list(obj, "Fields"), _list(obj, "Objects")
    longest_field, longest_marker = _longest(fields, objects)
    out += _aligned(p, fields, objects, start + pad + 2, longest_field, longest_marker)
    return out + "\n" + " " * (start + _width(obj["Type"]) + pad) + "}"


def _field(p: _Painter, f: Diff, start: int, pad: int, value_pad: int) -> str:
    kind, name = f["Type"], str(f["Name"])
    out = " " * start + p.marker(kind) + " " * pad + name + ": " + " " * value_pad
    if kind == "Deleted":
        out += _quote(f["Old"])
    elif kind == "Edited":
        out += f"{_quote(f['Old'])} => {_quote(f['New'])}"
    else:
        out += _quote(f["New"])
    if f.get("Annotations"):
        out += f" ({p.annotations(f['Annotations'])})"
    return out


def _aligned(
    p: _Painter,
    fields: Sequence[Diff],
    objects: Sequence[Diff],
    start: int,
    longest_field: int,
    longest_marker: int,
) -> str:
    """Fields, then blocks, one a line, markers and values lined up (no trailing newline)."""
    lines = [
        _field(p, f, start, longest_marker - _width(f["Type"]), longest_field - len(f["Name"]))
        for f in fields
    ]
    lines += [_object(p, o, start, longest_marker - _width(o["Type"])) for o in objects]
    return "\n".join(lines)


def _longest(fields: Sequence[Diff], objects: Sequence[Diff]) -> tuple[int, int]:
    """The longest field name, and the widest marker, among these fields and blocks."""
    longest_field = max((len(f["Name"]) for f in fields), default=0)
    longest_marker = max((_width(d["Type"]) for d in [*fields, *objects]), default=0)
    return longest_field, longest_marker


def _quote(s: str) -> str:
    """A value quoted as Go's %q quotes it (JSON's escaping is the same for what jobs hold)."""
    return json.dumps(s, ensure_ascii=False)
