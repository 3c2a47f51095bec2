"""HCL values as Python values, and HCL's type constraints and conversions.

A string is `str`, a number `int` (whole) or `float`, a bool `bool`, null `None`, a list, set or
tuple a `list`, a map or object a `dict`. A number that is whole is kept as an `int`, as Nomad
hands whole numbers on as integers."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

# A type constraint: ("string",), ("number",), ("bool",), ("any",), ("list", T), ("set", T),
# ("map", T), ("tuple", [T, ...]), ("object", {name: T}).
Type = tuple[Any, ...]
ANY: Type = ("any",)
STRING: Type = ("string",)
NUMBER: Type = ("number",)
BOOL: Type = ("bool",)


class ConversionError(Exception):
    """A value that does not fit a type constraint."""


def number(x: int | float) -> int | float:
    """A number as HCL keeps it: whole numbers as integers."""
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            raise ConversionError("the result is not a finite number")
        if x.is_integer() and abs(x) < 2**63:
            return int(x)
    return x


def type_name(value: Any) -> str:
    """The kind of `value`, in HCL's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def describe(t: Type) -> str:
    """A type constraint written as in HCL."""
    if t[0] in ("list", "set", "map"):
        return f"{t[0]}({describe(t[1])})"
    if t[0] == "tuple":
        return "tuple([" + ", ".join(describe(e) for e in t[1]) + "])"
    if t[0] == "object":
        return "object({" + ", ".join(f"{k} = {describe(v)}" for k, v in t[1].items()) + "})"
    return str(t[0])


def format_number(x: int | float) -> str:
    """A number written as HCL writes it into a string (never in exponent form)."""
    if isinstance(x, int):
        return str(x)
    text = repr(x)
    return format(Decimal(text), "f") if "e" in text or "E" in text else text


def to_string(value: Any) -> str:
    """`value` as a string, as HCL converts a primitive; anything else is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return format_number(value)
    if value is None:
        raise ConversionError("a string is required, not null")
    raise ConversionError(f"a string is required, not a {type_name(value)}")


def to_number(value: Any) -> int | float:
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise ConversionError(f"a number is required, not {_a(value)}")
    if isinstance(value, (int, float)):
        return value
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return number(float(text))
    except (ValueError, ConversionError):
        raise ConversionError(f"a number is required, not the string {value!r}") from None


def to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value == "true":
        return True
    if value == "false":
        return False
    raise ConversionError(f"a bool is required, not {_a(value)}")


def _a(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    return "null" if value is None else f"a {type_name(value)}"


def _sorted_set(items: list[Any]) -> list[Any]:
    unique: list[Any] = []
    for item in items:
        if item not in unique:
            unique.append(item)
    if all(isinstance(i, str) for i in unique) or all(
        isinstance(i, (int, float)) and not isinstance(i, bool) for i in unique
    ):
        return sorted(unique)
    return unique


def convert(value: Any, t: Type) -> Any:
    """`value` converted to the type constraint `t`, as HCL converts (null stays null)."""
    kind = t[0]
    if value is None or kind == "any":
        return value
    if kind == "string":
        return to_string(value)
    if kind == "number":
        return to_number(value)
    if kind == "bool":
        return to_bool(value)
    if kind in ("list", "set", "tuple"):
        if not isinstance(value, list):
            raise ConversionError(f"a {describe(t)} is required, not {_a(value)}")
        if kind == "tuple":
            if len(value) != len(t[1]):
                raise ConversionError(f"a tuple of {len(t[1])} elements is required, not {len(value)}")
            return [_at(i, v, e) for i, (v, e) in enumerate(zip(value, t[1], strict=True))]
        items = [_at(i, v, t[1]) for i, v in enumerate(value)]
        return _sorted_set(items) if kind == "set" else items
    if not isinstance(value, dict):
        raise ConversionError(f"a {describe(t)} is required, not {_a(value)}")
    if kind == "map":
        return {k: _at(k, v, t[1]) for k, v in value.items()}
    out: dict[str, Any] = {}
    for name, attr_type in t[1].items():
        if name not in value:
            if name in t[2]:
                out[name] = t[2][name]
                continue
            raise ConversionError(f'attribute "{name}" is required')
        out[name] = _at(name, value[name], attr_type)
    return out


def _at(where: int | str, value: Any, t: Type) -> Any:
    try:
        return convert(value, t)
    except ConversionError as e:
        raise ConversionError(f"element {where!r}: {e}") from None


def infer(value: Any) -> Type:
    """The type a variable takes from its default when it declares none: primitives keep
    their kind, collections accept any shape."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return STRING
    return ANY
