"""Go's text/template builtins: and, or, not, len, index, slice, eq, ne, lt, le, gt, ge,
print, printf, println, html, js, urlquery, call (and/or short-circuit in the executor)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote_plus

from drover.template.gofmt import sprint, sprintf, sprintln
from drover.template.registry import ANY, INT, STRING, Function
from drover.template.values import NO_VALUE, go_type, is_true

_BAD_COMPARISON = "incompatible types for comparison"


def _kind(v: Any) -> str:
    if v is None or v is NO_VALUE:
        return "invalid"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    return "other"


def go_eq(arg1: Any, *others: Any) -> bool:
    if not others:
        raise ValueError("missing argument for comparison")
    k1 = _kind(arg1)
    for arg in others:
        k2 = _kind(arg)
        if k1 != k2:
            if k1 != "invalid" and k2 != "invalid":
                raise ValueError(_BAD_COMPARISON)
            continue
        if k1 == "invalid":
            return True
        if k1 == "other" and (isinstance(arg1, list | dict) or isinstance(arg, list | dict)):
            bad = arg1 if isinstance(arg1, list | dict) else arg
            raise ValueError(f"non-comparable type {bad}: {go_type(bad)}")
        if arg1 == arg:
            return True
    return False


def go_ne(a: Any, b: Any) -> bool:
    return not go_eq(a, b)


def go_lt(a: Any, b: Any) -> bool:
    k1, k2 = _kind(a), _kind(b)
    for k in (k1, k2):
        if k not in ("int", "float", "string", "bool"):
            raise ValueError("invalid type for comparison")
    if k1 != k2:
        raise ValueError(_BAD_COMPARISON)
    if k1 == "bool":
        raise ValueError("invalid type for comparison")
    return bool(a < b)


def go_le(a: Any, b: Any) -> bool:
    return go_lt(a, b) or go_eq(a, b)


def go_gt(a: Any, b: Any) -> bool:
    return not go_le(a, b)


def go_ge(a: Any, b: Any) -> bool:
    return not go_lt(a, b)


def go_len(item: Any) -> int:
    if item is None or item is NO_VALUE:
        raise ValueError("len of nil pointer")
    if isinstance(item, str):
        return len(item.encode())
    if isinstance(item, list | tuple | dict):
        return len(item)
    raise ValueError(f"len of type {go_type(item)}")


def _index_of(index: Any, size: int) -> int:
    if index is None or index is NO_VALUE:
        raise ValueError("cannot index slice/array with nil")
    if not isinstance(index, int) or isinstance(index, bool):
        raise ValueError(f"cannot index slice/array with type {go_type(index)}")
    if index < 0 or index >= size:
        raise ValueError(f"index out of range: {index}")
    return index


def go_index(item: Any, *indexes: Any) -> Any:
    if item is None or item is NO_VALUE:
        raise ValueError("index of untyped nil")
    for index in indexes:
        if item is None or item is NO_VALUE:
            raise ValueError("index of nil pointer")
        if isinstance(item, str):
            item = item.encode()[_index_of(index, len(item.encode()))]
        elif isinstance(item, list | tuple):
            item = item[_index_of(index, len(item))]
        elif isinstance(item, dict):
            if index is None or index is NO_VALUE:
                raise ValueError("value is nil; should be of type string")
            if not isinstance(index, str):
                raise ValueError(f"value has type {go_type(index)}; should be string")
            item = item.get(index)
        else:
            raise ValueError(f"can't index item of type {go_type(item)}")
    return item


def go_slice(item: Any, *indexes: Any) -> Any:
    if item is None or item is NO_VALUE:
        raise ValueError("slice of untyped nil")
    if len(indexes) > 3:
        raise ValueError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise ValueError("cannot 3-index slice a string")
        size = len(item.encode())
    elif isinstance(item, list | tuple):
        size = len(item)
    else:
        raise ValueError(f"can't slice item of type {go_type(item)}")
    bounds = [0, size]
    for i, index in enumerate(indexes[:2]):
        if not isinstance(index, int) or isinstance(index, bool):
            raise ValueError(f"cannot index slice/array with type {go_type(index)}")
        if index < 0 or index > size:
            raise ValueError(f"index out of range: {index}")
        bounds[i] = index
    if bounds[0] > bounds[1]:
        raise ValueError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if isinstance(item, str):
        return item.encode()[bounds[0] : bounds[1]].decode(errors="replace")
    return list(item[bounds[0] : bounds[1]])


def _eval_args(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint(list(args))


_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&#39;", '"': "&#34;", "\0": "\ufffd"}
_JS = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026", "=": "\\u003D"}


def go_html(*args: Any) -> str:
    return "".join(_HTML.get(c, c) for c in _eval_args(args))


def go_js(*args: Any) -> str:
    out = []
    for c in _eval_args(args):
        if c in _JS:
            out.append(_JS[c])
        elif ord(c) < 0x20 or (ord(c) >= 0x80 and not c.isprintable()):
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def go_urlquery(*args: Any) -> str:
    return quote_plus(_eval_args(args), safe="-_.~")


def go_call(fn: Any, *args: Any) -> Any:
    if fn is None or fn is NO_VALUE:
        raise ValueError("call of nil")
    if not callable(fn):
        raise ValueError(f"non-function of type {go_type(fn)}")
    return fn(*args)


def _first_true(*args: Any) -> Any:  # the executor short-circuits and/or; these are their types
    return next((a for a in args if is_true(a)), args[-1])


BUILTINS: dict[str, Function] = {
    "and": Function(_first_true, (ANY,), ANY),
    "or": Function(_first_true, (ANY,), ANY),
    "not": Function(lambda a: not is_true(a), (ANY,)),
    "len": Function(go_len, (ANY,)),
    "index": Function(go_index, (ANY,), ANY),
    "slice": Function(go_slice, (ANY,), ANY),
    "eq": Function(go_eq, (ANY,), ANY),
    "ne": Function(go_ne, (ANY, ANY)),
    "lt": Function(go_lt, (ANY, ANY)),
    "le": Function(go_le, (ANY, ANY)),
    "gt": Function(go_gt, (ANY, ANY)),
    "ge": Function(go_ge, (ANY, ANY)),
    "print": Function(lambda *a: sprint(list(a)), (), ANY),
    "printf": Function(lambda f, *a: sprintf(f, list(a)), (STRING,), ANY),
    "println": Function(lambda *a: sprintln(list(a)), (), ANY),
    "html": Function(go_html, (), ANY),
    "js": Function(go_js, (), ANY),
    "urlquery": Function(go_urlquery, (), ANY),
    "call": Function(go_call, (ANY,), ANY),
}

__all__ = ["BUILTINS", "INT"]
