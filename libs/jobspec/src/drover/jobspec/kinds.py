"""Argument kinds, the types drover.jobspec.schema gives each argument, and a value converted
to one: string, int, number, bool, duration (ns), strings (list of strings), strmap (map of
strings; an argument or a block), strlists (map of lists of strings), any (a driver's config:
blocks read as lists of objects, as Nomad reads them)."""

from __future__ import annotations

from typing import Any

from drover.jobspec.values import ConversionError, to_bool, to_number, to_string, type_name
from drover.model.durations import parse_duration


def convert_kind(kind: str, value: Any) -> Any:
    """`value` as `kind`; ConversionError or ValueError when it is not one."""
    if value is None:
        return None
    if kind == "string":
        return to_string(value)
    if kind in ("int", "number"):
        n = to_number(value)
        if kind == "int" and isinstance(n, float):
            raise ConversionError(f"a whole number is required, not {n}")
        return n
    if kind == "bool":
        return to_bool(value)
    if kind == "duration":
        if isinstance(value, str):
            return parse_duration(value)
        return parse_duration(to_number(value))
    if kind == "strings":
        if not isinstance(value, list):
            raise ConversionError(f"a list of strings is required, not a {type_name(value)}")
        return [to_string(v) for v in value]
    if kind in ("strmap", "strlists"):
        if not isinstance(value, dict):
            raise ConversionError(f"a map is required, not a {type_name(value)}")
        inner = "strings" if kind == "strlists" else "string"
        return {k: convert_kind(inner, v) for k, v in value.items()}
    return value
