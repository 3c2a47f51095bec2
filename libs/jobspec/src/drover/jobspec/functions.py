"""The functions a jobspec may call: HCL's standard ones that jobspecs use, without those that
read the clock or randomness (a parse must give the same job every time). `file` reads through
the reader the caller hands in, and is refused without one."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import posixpath
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.formatting import format_verbs
from drover.jobspec.values import (
    ConversionError,
    format_number,
    number,
    to_bool,
    to_number,
    to_string,
    type_name,
)

Fn = Callable[[list[Any]], Any]


def _arity(n: int | tuple[int, int], fn: Callable[..., Any]) -> Fn:
    lo, hi = (n, n) if isinstance(n, int) else n

    def wrapped(args: list[Any]) -> Any:
        if not lo <= len(args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise FunctionError(f"takes {want} arguments, got {len(args)}")
        return fn(*args)

    return wrapped


def _list(value: Any, what: str = "argument") -> list[Any]:
    if not isinstance(value, list):
        raise FunctionError(f"the {what} must be a list, not a {type_name(value)}")
    return value


def _map(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FunctionError(f"the argument must be a map or object, not a {type_name(value)}")
    return value


def _str(value: Any) -> str:
    return to_string(value)


def _int(value: Any) -> int:
    n = to_number(value)
    if isinstance(n, float):
        raise FunctionError(f"a whole number is required, not {format_number(n)}")
    return n


def _length(v: Any) -> int:
    if isinstance(v, (list, dict)):
        return len(v)
    return len(_str(v))


def _coalesce(*args: Any) -> Any:
    for a in args:
        if a is not None and a != "":
            return a
    raise FunctionError("every argument is null or empty")


def _lookup(m: Any, key: Any, *default: Any) -> Any:
    mapping, k = _map(m), _str(key)
    if k in mapping:
        return mapping[k]
    if default:
        return default[0]
    raise FunctionError(f'the map has no element for the key "{k}" and no default was given')


def _element(lst: Any, i: Any) -> Any:
    items = _list(lst)
    if not items:
        raise FunctionError("cannot use element() on an empty list")
    return items[_int(i) % len(items)]


def _range(*args: Any) -> list[Any]:
    nums = [to_number(a) for a in args]
    start, stop, step = (
        (0, nums[0], 1) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) == 3 else 1)
    )
    if len(nums) == 2 and start > stop:
        step = -1
    if step == 0:
        raise FunctionError("the step must not be zero")
    out, x = [], start
    while (x < stop) if step > 0 else (x > stop):
        out.append(number(x))
        x += step
        if len(out) > 1024:
            raise FunctionError("more than 1024 elements")
    return out


def _replace(s: Any, old: Any, new: Any) -> str:
    text, pattern, repl = _str(s), _str(old), _str(new)
    if len(pattern) > 1 and pattern.startswith("/") and pattern.endswith("/"):
        return re.sub(pattern[1:-1], re.sub(r"\$\{?(\w+)\}?", r"\\g<\1>", repl), text)
    return text.replace(pattern, repl)


def _merge(*maps: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in maps:
        if m is not None:
            out.update(_map(m))
    return out


def _flatten(lst: Any) -> list[Any]:
    out: list[Any] = []
    for item in _list(lst):
        out.extend(_flatten(item) if isinstance(item, list) else [item])
    return out


def _distinct(lst: Any) -> list[Any]:
    out: list[Any] = []
    for item in _list(lst):
        if item not in out:
            out.append(item)
    return out


def _minmax(pick: Callable[..., Any]) -> Fn:
    def fn(args: list[Any]) -> Any:
        if not args:
            raise FunctionError("needs at least one argument")
        return pick(to_number(a) for a in args)

    return fn


def _tonumber(v: Any) -> Any:
    return None if v is None else to_number(v)


def _tostring(v: Any) -> Any:
    return None if v is None else to_string(v)


def _tobool(v: Any) -> Any:
    return None if v is None else to_bool(v)


def _parseint(s: Any, base: Any) -> int:
    try:
        return int(_str(s), _int(base))
    except ValueError:
        raise FunctionError(f"cannot parse {s!r} as a base {base} integer") from None


def _indent(n: Any, s: Any) -> str:
    return _str(s).replace("\n", "\n" + " " * min(_int(n), 1024))


def _pow(a: Any, b: Any) -> Any:
    # In floats, as HCL's numbers are: a huge integer power would take the parse forever.
    try:
        return number(float(to_number(a)) ** float(to_number(b)))
    except (OverflowError, ZeroDivisionError, ConversionError):
        raise FunctionError("the result is not a finite number") from None


def _regex(pattern: Any, s: Any) -> Any:
    m = re.search(_str(pattern), _str(s))
    if m is None:
        raise FunctionError("the pattern did not match")
    if m.groupdict():
        return m.groupdict()
    return list(m.groups()) if m.groups() else m.group(0)


def _substr(s: Any, offset: Any, length: Any) -> str:
    text, start, n = _str(s), _int(offset), _int(length)
    if start < 0:
        start += len(text)
    return text[start:] if n < 0 else text[start : start + n]


def _slice(lst: Any, start: Any, end: Any) -> list[Any]:
    items, a, b = _list(lst), _int(start), _int(end)
    if not 0 <= a <= b <= len(items):
        raise FunctionError(f"indexes {a}, {b} are out of range for a list of {len(items)}")
    return items[a:b]


def _index(lst: Any, value: Any) -> int:
    items = _list(lst)
    if value not in items:
        raise FunctionError("the value is not in the list")
    return items.index(value)


def _chunk(lst: Any, size: Any) -> list[Any]:
    items, n = _list(lst), _int(size)
    if n <= 0:
        return [items]
    return [items[i : i + n] for i in range(0, len(items), n)]


def _jsonencode(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def _jsondecode(s: Any) -> Any:
    try:
        return json.loads(_str(s), parse_float=lambda t: number(float(t)))
    except json.JSONDecodeError as e:
        raise FunctionError(f"not JSON: {e}") from None


def _base64decode(s: Any) -> str:
    try:
        return base64.b64decode(_str(s), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise FunctionError("not base64 of UTF-8 text") from None


def _digest(algorithm: str) -> Fn:
    return _arity(1, lambda s: hashlib.new(algorithm, _str(s).encode()).hexdigest())


def _sort(lst: Any) -> list[str]:
    return sorted(_str(v) for v in _list(lst))


def _set_op(op: Callable[[list[Any], list[Any]], list[Any]]) -> Fn:
    def fn(args: list[Any]) -> list[Any]:
        if not args:
            raise FunctionError("needs at least one argument")
        out = _distinct(_list(args[0]))
        for other in args[1:]:
            out = op(out, _list(other))
        return sorted(out, key=str)

    return fn


def _title(s: Any) -> str:
    return re.sub(r"(^|\s)(\S)", lambda m: m.group(1) + m.group(2).upper(), _str(s))


def standard() -> dict[str, Fn]:
    """Every function but `file`."""
    return {
        "format": lambda args: format_verbs(_str(args[0]), args[1:]) if args else _raise("takes a format"),
        "formatlist": _formatlist,
        "join": _arity(2, lambda sep, lst: _str(sep).join(_str(v) for v in _list(lst))),
        "split": _arity(2, lambda sep, s: _str(s).split(_str(sep)) if _str(s) else []),
        "upper": _arity(1, lambda s: _str(s).upper()),
        "lower": _arity(1, lambda s: _str(s).lower()),
        "title": _arity(1, _title),
        "trimspace": _arity(1, lambda s: _str(s).strip()),
        "trim": _arity(2, lambda s, c: _str(s).strip(_str(c))),
        "trimprefix": _arity(2, lambda s, p: _str(s).removeprefix(_str(p))),
        "trimsuffix": _arity(2, lambda s, p: _str(s).removesuffix(_str(p))),
        "chomp": _arity(1, lambda s: _str(s).rstrip("\r\n")),
        "indent": _arity(2, _indent),
        "replace": _arity(3, _replace),
        "regex": _arity(2, _regex),
        "regexall": _arity(2, lambda p, s: [m.group(0) for m in re.finditer(_str(p), _str(s))]),
        "substr": _arity(3, _substr),
        "strrev": _arity(1, lambda s: _str(s)[::-1]),
        "startswith": _arity(2, lambda s, p: _str(s).startswith(_str(p))),
        "endswith": _arity(2, lambda s, p: _str(s).endswith(_str(p))),
        "strcontains": _arity(2, lambda s, p: _str(p) in _str(s)),
        "concat": lambda args: [v for lst in args for v in _list(lst)],
        "merge": lambda args: _merge(*args),
        "lookup": _arity((2, 3), _lookup),
        "coalesce": lambda args: _coalesce(*args),
        "coalescelist": lambda args: next((a for a in args if _list(a)), []),
        "compact": _arity(1, lambda lst: [v for v in _list(lst) if v not in ("", None)]),
        "length": _arity(1, _length),
        "range": _arity((1, 3), _range),
        "element": _arity(2, _element),
        "index": _arity(2, _index),
        "slice": _arity(3, _slice),
        "contains": _arity(2, lambda lst, v: v in _list(lst)),
        "keys": _arity(1, lambda m: sorted(_map(m))),
        "values": _arity(1, lambda m: [v for _, v in sorted(_map(m).items())]),
        "zipmap": _arity(2, lambda k, v: dict(zip((_str(x) for x in _list(k)), _list(v), strict=False))),
        "flatten": _arity(1, _flatten),
        "distinct": _arity(1, _distinct),
        "reverse": _arity(1, lambda lst: _list(lst)[::-1]),
        "sort": _arity(1, _sort),
        "chunklist": _arity(2, _chunk),
        "setunion": _set_op(lambda a, b: a + [x for x in b if x not in a]),
        "setintersection": _set_op(lambda a, b: [x for x in a if x in b]),
        "setsubtract": _set_op(lambda a, b: [x for x in a if x not in b]),
        "jsonencode": _arity(1, _jsonencode),
        "jsondecode": _arity(1, _jsondecode),
        "base64encode": _arity(1, lambda s: base64.b64encode(_str(s).encode()).decode()),
        "base64decode": _arity(1, _base64decode),
        "urlencode": _arity(1, lambda s: urllib.parse.quote(_str(s), safe="")),
        "md5": _digest("md5"),
        "sha1": _digest("sha1"),
        "sha256": _digest("sha256"),
        "sha512": _digest("sha512"),
        "tostring": _arity(1, _tostring),
        "tonumber": _arity(1, _tonumber),
        "tobool": _arity(1, _tobool),
        "tolist": _arity(1, lambda v: list(_list(v))),
        "toset": _arity(1, lambda v: sorted(_distinct(_list(v)), key=str)),
        "tomap": _arity(1, lambda v: dict(_map(v))),
        "min": _minmax(min),
        "max": _minmax(max),
        "sum": _arity(1, lambda lst: number(sum(to_number(v) for v in _list(lst)))),
        "abs": _arity(1, lambda n: abs(to_number(n))),
        "ceil": _arity(1, lambda n: math.ceil(to_number(n))),
        "floor": _arity(1, lambda n: math.floor(to_number(n))),
        "pow": _arity(2, _pow),
        "signum": _arity(1, lambda n: (to_number(n) > 0) - (to_number(n) < 0)),
        "parseint": _arity(2, _parseint),
    }


def _formatlist(args: list[Any]) -> list[str]:
    if not args:
        raise FunctionError("takes a format")
    lists = [a for a in args[1:] if isinstance(a, list)]
    n = len(lists[0]) if lists else 1
    if any(len(lst) != n for lst in lists):
        raise FunctionError("every list argument must have the same length")
    return [
        format_verbs(_str(args[0]), [a[i] if isinstance(a, list) else a for a in args[1:]]) for i in range(n)
    ]


def _raise(message: str) -> Any:
    raise FunctionError(message)


def functions(read_file: Callable[[str], str] | None, base_dir: str = "") -> dict[str, Fn]:
    """The function table; `file(path)` reads through `read_file` (a relative path joined to
    `base_dir`, the jobspec's directory), or is refused."""
    table = standard()

    def file(path: Any) -> str:
        if read_file is None:
            raise FunctionError("reading files is not allowed here")
        where = posixpath.join(base_dir, _str(path))
        try:
            return read_file(where)
        except (OSError, ValueError) as e:
            raise FunctionError(f"cannot read {where!r}: {e}") from None

    table["file"] = _arity(1, file)
    return table


__all__ = ["functions", "standard"]
