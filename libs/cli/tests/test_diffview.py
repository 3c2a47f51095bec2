"""A job Diff printed as `nomad job plan` prints it: markers, alignment, headers, update counts
and annotations, what shows only with verbose."""

from __future__ import annotations

import re
from typing import Any

import pytest

from drover.cli.diffview import format_diff


def field(
    kind: str, name: str, old: str = "", new: str = "", notes: list[str] | None = None
) -> dict[str, Any]:
    return {"Type": kind, "Name": name, "Old": old, "New": new, "Annotations": notes}


def obj(
    kind: str, name: str, fields: list[dict[str, Any]], objects: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"Type": kind, "Name": name, "Fields": fields, "Objects": objects}


def task(kind: str, name: str, fields: Any = None, objects: Any = None, notes: Any = None) -> dict[str, Any]:
    return {"Type": kind, "Name": name, "Fields": fields, "Objects": objects, "Annotations": notes}


def group(
    kind: str, name: str, tasks: Any, fields: Any = None, objects: Any = None, updates: Any = None
) -> dict[str, Any]:
    return {
        "Type": kind,
        "Name": name,
        "Fields": fields,
        "Objects": objects,
        "Tasks": tasks,
        "Updates": updates,
    }


def job(kind: str, groups: Any, fields: Any = None, objects: Any = None) -> dict[str, Any]:
    return {"Type": kind, "ID": "example", "Fields": fields, "Objects": objects, "TaskGroups": groups}


IMAGE = job("Edited", [group("Edited", "cache", [task("Edited", "redis", objects=[obj("Edited", "Config", [
    field("Edited", "image", "redis:3.2", "redis:4.0"), field("None", "port_map[0][db]", "6379", "6379")])],
    notes=["forces create/destroy update"])], updates={"create/destroy update": 1})])  # fmt: skip

COUNT = job("Edited", [group("Edited", "cache", [task("None", "redis")],
    fields=[field("Edited", "Count", "1", "3", ["forces create"])], updates={"ignore": 1, "create": 2})],
    fields=[field("Added", "Meta[owner]", new="ops")])  # fmt: skip

CONSTRAINT = job("Edited", [group("None", "cache", [task("None", "redis")])], objects=[obj("Deleted", "Constraint", [
    field("Deleted", "LTarget", "${attr.kernel.name}"), field("Deleted", "Operand", "="),
    field("Deleted", "RTarget", "linux")])])  # fmt: skip

NEW = job("Added", [group("Added", "cache", [task("Added", "redis", fields=[field("Added", "Driver", new="docker")],
    notes=["forces create"])], fields=[field("Added", "Count", new="1", notes=["forces create"])],
    updates={"create": 1})], fields=[field("Added", "Type", new="service")])  # fmt: skip

TASKS = job("Edited", [group("Edited", "cache", [
    task("Deleted", "old", fields=[field("Deleted", "Driver", old="mock")], notes=["forces destroy"]),
    task("Edited", "redis", fields=[field("Edited", "KillTimeout", "5", "9")], notes=["forces in-place update"]),
])])  # fmt: skip


@pytest.mark.parametrize(
    ("diff", "verbose", "expected"),
    [
        (
            IMAGE,
            False,
            """\
+/- Job: "example"
+/- Task Group: "cache" (1 create/destroy update)
  +/- Task: "redis" (forces create/destroy update)
    +/- Config {
      +/- image:           "redis:3.2" => "redis:4.0"
          port_map[0][db]: "6379"
        }

""",
        ),
        (
            COUNT,
            False,
            """\
+/- Job: "example"
+   Meta[owner]: "ops"
+/- Task Group: "cache" (2 create, 1 ignore)
  +/- Count: "1" => "3" (forces create)
      Task: "redis"

""",
        ),
        (
            CONSTRAINT,
            False,
            """\
+/- Job: "example"
- Constraint {
  - LTarget: "${attr.kernel.name}"
  - Operand: "="
  - RTarget: "linux"
  }
  Task Group: "cache"
    Task: "redis"

""",
        ),
        (
            NEW,
            False,
            """\
+ Job: "example"
+ Task Group: "cache" (1 create)
  + Task: "redis" (forces create)

""",
        ),
        (
            NEW,
            True,
            """\
+ Job: "example"
+ Type: "service"
+ Task Group: "cache" (1 create)
  + Count: "1" (forces create)
  + Task: "redis" (forces create)
    + Driver: "docker"

""",
        ),
        (
            TASKS,
            False,
            """\
+/- Job: "example"
+/- Task Group: "cache"
  -   Task: "old" (forces destroy)
  +/- Task: "redis" (forces in-place update)
    +/- KillTimeout: "5" => "9"

""",
        ),
    ],
    ids=["image change", "count change", "constraint removed", "new job", "new job verbose", "tasks"],
)
def test_a_diff_prints_as_nomad_job_plan_prints_it(
    diff: dict[str, Any], verbose: bool, expected: str
) -> None:
    assert format_diff(diff, verbose=verbose) == expected


def test_colour_marks_markers_updates_and_annotations() -> None:
    out = format_diff(IMAGE, color=True)
    assert out.startswith('\x1b[93m+/-\x1b[0m \x1b[1mJob: "example"\x1b[0m')
    assert "\x1b[33m1 create/destroy update\x1b[0m" in out
    assert "(\x1b[33mforces create/destroy update\x1b[0m)" in out
    # The same text once the colours are taken out.
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == format_diff(IMAGE)


def test_values_are_quoted_as_go_quotes_them() -> None:
    diff = job("Edited", [], fields=[field("Edited", "Meta[cmd]", 'say "hi"', "a\nb")])
    assert format_diff(diff).splitlines()[1] == '+/- Meta[cmd]: "say \\"hi\\"" => "a\\nb"'
