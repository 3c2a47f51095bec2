"""How a function takes its arguments, as HCL's function specs do: a fixed list of named
parameters (and perhaps a variadic rest), each argument converted to the parameter's type
(a number given for a string is its text, a string given for a number is parsed, null is
refused unless the function takes it), and equality and sets as cty compares and orders them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.values import ConversionError, format_number, to_number, to_string, type_name

Fn = Callable[[list[Any]], Any]


def takes(fn: Callable[..., Any], *names: str, rest: str = "") -> Fn:
    """`fn` called with one argument per parameter in `names`, then any number for `rest`
    (when given); a call with too few or too many arguments is refused as HCL refuses it."""

    def call(args: list[Any]) -> Any:
        if len(args) < len(names):
            raise FunctionError(f'expects {_count(len(names))}; "{names[len(args)]}" is missing')
        if len(args) > len(names) and not rest:
            raise FunctionError(f"expects only {_count(len(names))}, got {len(args)}")
        return fn(*args)

    return call


def _count(n: int) -> str:
    return "1 argument" if n == 1 else f"{n} arguments"


def string(value: Any, name: str) -> str:
    """A string parameter's argument: a number or bool as its text."""
    try:
        return to_string(value)
    except ConversionError as e:
        raise FunctionError(f'"{name}": {e}') from None


def number(value: Any, name: str) -> int | float:
    """A number parameter's argument: a string parsed as one."""
    try:
        return to_number(value)
    except ConversionError as e:
        raise FunctionError(f'"{name}": {e}') from None


def whole(value: Any, name: str) -> int:
    """A number parameter read as a Go int: a fraction is refused."""
    n = number(value, name)
    if isinstance(n, float) or not -(2**63) <= n < 2**63:
        raise FunctionError(f'"{name}": a whole number is required, not {format_number(n)}')
    return n


def sequence(value: Any, name: str) -> list[Any]:
    """A list, tuple or set argument, as given."""
    if not isinstance(value, list):
        raise FunctionError(f'"{name}": a list is required, not {a(value)}')
    return value


def mapping(value: Any, name: str) -> dict[str, Any]:
    """A map or object argument, as given."""
    if not isinstance(value, dict):
        raise FunctionError(f'"{name}": a map or object is required, not {a(value)}')
    return value


def strings(value: Any, name: str) -> list[str | None]:
    """A list(string) argument: each element as its text, a null element kept as None."""
    return [None if v is None else string(v, name) for v in sequence(value, name)]


def a(value: Any) -> str:
    """The kind of `value` with its article: "a list", "an object", "null"."""
    if value is None:
        return "null"
    kind = type_name(value)
    return f"an {kind}" if kind == "object" else f"a {kind}"


def key(value: Any) -> Any:
    """`value` as a hashable key equal for values cty finds equal: 1 and 1.0 are one number,
    but 1, "1" and true are three values of different types."""
    if isinstance(value, list):
        return ("list", tuple(key(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, key(v)) for k, v in value.items())))
    return (type_name(value), value)


def equal(a: Any, b: Any) -> bool:
    """`a == b` as cty compares: values of different types are never equal."""
    return bool(key(a) == key(b))


def unify(values: list[Any]) -> list[Any]:
    """`values` as elements of one list: as cty unifies primitive types, strings mixed with
    numbers or bools make every element a string; numbers mixed with bools cannot be one type."""
    kinds = {type_name(v) for v in values if v is not None}
    if "string" in kinds and kinds <= {"string", "number", "bool"}:
        return [None if v is None else to_string(v) for v in values]
    if kinds == {"number", "bool"}:
        raise FunctionError("all elements must have the same type")
    return values


def distinct(values: list[Any]) -> list[Any]:
    """`values` each once, in the order first seen."""
    seen: dict[Any, Any] = {}
    for v in values:
        seen.setdefault(key(v), v)
    return list(seen.values())


def as_set(values: list[Any]) -> list[Any]:
    """`values` as a cty set holds them: each once, strings and numbers in order (what else a
    set holds, in the order first seen)."""
    out = distinct(values)
    if all(isinstance(v, str) for v in out):
        return sorted(out)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in out):
        return sorted(out)
    if all(isinstance(v, bool) for v in out):
        return sorted(out)
    return out
