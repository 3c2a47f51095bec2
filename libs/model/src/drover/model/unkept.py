"""What a job's JSON holds that Drover's model does not keep, for the Warnings of the register,
plan and validate answers: no block is dropped in silence.

A member with no value (null, "", 0, false, an empty list or object) is not reported: `nomad
job run -output` writes every unset block and field that way."""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from typing import Any, Union, get_args, get_origin

from pydantic import AliasChoices, BaseModel

from drover.model.job import Job


def unkept_in_job(data: Any) -> list[str]:
    """One warning per member of a job's JSON that the model does not keep."""
    return [
        f"{where}{key} is not supported by Drover and was dropped" for where, key in _unkept(Job, data, "")
    ]


def format_warnings(warnings: list[str]) -> str:
    """Nomad's form of a response's `Warnings` (structs.MergeMultierrorWarnings); "" for none."""
    if not warnings:
        return ""
    head = "1 warning:\n" if len(warnings) == 1 else f"{len(warnings)} warnings:\n"
    return head + "".join(f"\n* {w.strip()}" for w in warnings)


def _unkept(model: type[BaseModel], data: Any, where: str) -> Iterator[tuple[str, str]]:
    if not isinstance(data, dict):
        return
    fields = _fields(model)
    for key, value in data.items():
        annotation = fields.get(key)
        if annotation is None:
            if _has_value(value):
                yield where, key
            continue
        inner = _model_in(annotation)
        if inner is None:
            continue
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _unkept(inner, item, where + _element(key, item, i))
        elif isinstance(value, dict) and get_origin(_without_none(annotation)) is dict:
            for name, item in value.items():
                yield from _unkept(inner, item, f"{where}{key}[{name!r}].")
        else:
            yield from _unkept(inner, value, f"{where}{key}.")


def _element(key: str, item: Any, index: int) -> str:
    """How a list element is named in a warning: a task group or task by its name."""
    name = item.get("Name") if isinstance(item, dict) else None
    if key == "TaskGroups" and name:
        return f'group "{name}": '
    if key == "Tasks" and name:
        return f'task "{name}": '
    return f"{key}[{index}]."


@functools.cache
def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Every key the model reads a field from (its alias, name and alias choices) -> the type."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        keys = {name, info.alias or name}
        if isinstance(info.validation_alias, AliasChoices):
            keys |= {c for c in info.validation_alias.choices if isinstance(c, str)}
        elif isinstance(info.validation_alias, str):
            keys.add(info.validation_alias)
        for key in keys:
            out[key] = info.annotation
    return out


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, alone, in a list or as a dict's values; None for scalars."""
    t = _without_none(annotation)
    origin = get_origin(t)
    if origin is list:
        t = get_args(t)[0]
    elif origin is dict:
        t = get_args(t)[1]
    return t if isinstance(t, type) and issubclass(t, BaseModel) else None


def _has_value(value: Any) -> bool:
    return value not in (None, "", 0, False, [], {})
