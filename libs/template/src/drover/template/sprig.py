"""The sprig functions consul-template offers as ``sprig_*`` that jobspecs use most (its
hermetic set: no clock, no randomness, no environment)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from drover.template.gofmt import go_quote
from drover.template.registry import ANY, INT, LIST, STRING, Function
from drover.template.values import NO_VALUE, format_value, is_true, to_json


def _strval(v: Any) -> str:
    return v if isinstance(v, str) else format_value(v)


def _to_int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    if isinstance(v, str):
        try:
            return int(float(v)) if "." in v else int(v)
        except ValueError:
            return 0
    return 0


def _empty(v: Any) -> bool:
    return v is NO_VALUE or not is_true(v)


def _default(d: Any, *given: Any) -> Any:
    if not given or _empty(given[0]):
        return d
    return given[0]


def _coalesce(*values: Any) -> Any:
    return next((v for v in values if not _empty(v)), None)


def _join(sep: str, v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, list | tuple):
        return sep.join(_strval(x) for x in v if x is not None)
    return _strval(v)


def _quote(*values: Any) -> str:
    return " ".join(go_quote(_strval(v)) for v in values if v is not None)


def _squote(*values: Any) -> str:
    return " ".join("'" + _strval(v) + "'" for v in values if v is not None)


def _b64dec(s: str) -> str:
    try:
        return base64.b64decode(s, validate=True).decode(errors="replace")
    except ValueError as e:
        return str(e)


def _dict(*pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(0, len(pairs), 2):
        out[_strval(pairs[i])] = pairs[i + 1] if i + 1 < len(pairs) else ""
    return out


def _div(a: Any, b: Any) -> int:
    x, y = _to_int(a), _to_int(b)
    if y == 0:
        raise ValueError("runtime error: integer divide by zero")
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _until(n: int) -> list[int]:
    return list(range(n)) if n >= 0 else list(range(0, n, -1))


def _s(fn: Any, n: int = 1) -> Function:
    return Function(fn, (STRING,) * n)


def _indent(spaces: int, s: str) -> str:
    pad = " " * spaces
    return pad + s.replace("\n", "\n" + pad)


SPRIG: dict[str, Function] = {
    "default": Function(_default, (ANY,), ANY),
    "empty": Function(_empty, (ANY,)),
    "coalesce": Function(_coalesce, (), ANY),
    "ternary": Function(lambda t, f, c: t if c else f, (ANY, ANY, "bool")),
    "list": Function(lambda *v: list(v), (), ANY),
    "dict": Function(_dict, (), ANY),
    "get": Function(lambda d, k: (d or {}).get(k, ""), ("map[string]interface {}", STRING)),
    "hasKey": Function(lambda d, k: k in (d or {}), ("map[string]interface {}", STRING)),
    "keys": Function(lambda *ds: [k for d in ds for k in (d or {})], (), ANY),
    "first": Function(lambda v: v[0] if v else None, (ANY,)),
    "last": Function(lambda v: v[-1] if v else None, (ANY,)),
    "has": Function(lambda needle, haystack: needle in (haystack or []), (ANY, ANY)),
    "join": Function(_join, (STRING, ANY)),
    "splitList": _s(lambda sep, s: s.split(sep), 2),
    "trim": _s(lambda s: s.strip(" \t\n\r\v\f")),
    "trimAll": _s(lambda cut, s: s.strip(cut), 2),
    "trimPrefix": _s(lambda p, s: s[len(p) :] if p and s.startswith(p) else s, 2),
    "trimSuffix": _s(lambda p, s: s[: -len(p)] if p and s.endswith(p) else s, 2),
    "upper": _s(str.upper),
    "lower": _s(str.lower),
    "title": _s(lambda s: " ".join(w[:1].upper() + w[1:] for w in s.split(" "))),
    "repeat": Function(lambda n, s: s * max(n, 0), (INT, STRING)),
    "replace": _s(lambda old, new, s: s.replace(old, new), 3),
    "contains": _s(lambda sub, s: sub in s, 2),
    "hasPrefix": _s(lambda p, s: s.startswith(p), 2),
    "hasSuffix": _s(lambda p, s: s.endswith(p), 2),
    "nospace": _s(lambda s: "".join(s.split())),
    "quote": Function(_quote, (), ANY),
    "squote": Function(_squote, (), ANY),
    "indent": Function(_indent, (INT, STRING)),
    "nindent": Function(lambda n, s: "\n" + _indent(n, s), (INT, STRING)),
    "b64enc": _s(lambda s: base64.b64encode(s.encode()).decode()),
    "b64dec": _s(_b64dec),
    "sha256sum": _s(lambda s: hashlib.sha256(s.encode()).hexdigest()),
    "toString": Function(_strval, (ANY,)),
    "toJson": Function(lambda v: to_json(v), (ANY,)),
    "toPrettyJson": Function(lambda v: to_json(v, "  "), (ANY,)),
    "int": Function(_to_int, (ANY,)),
    "atoi": _s(lambda s: _to_int(s)),
    "add": Function(lambda *v: sum(_to_int(x) for x in v), (), ANY),
    "add1": Function(lambda v: _to_int(v) + 1, (ANY,)),
    "sub": Function(lambda a, b: _to_int(a) - _to_int(b), (ANY, ANY)),
    "mul": Function(lambda a, *v: _mul(a, v), (ANY,), ANY),
    "div": Function(_div, (ANY, ANY)),
    "mod": Function(lambda a, b: _to_int(a) % _to_int(b) if _to_int(b) else 0, (ANY, ANY)),
    "max": Function(lambda a, *v: max([_to_int(a), *(_to_int(x) for x in v)]), (ANY,), ANY),
    "min": Function(lambda a, *v: min([_to_int(a), *(_to_int(x) for x in v)]), (ANY,), ANY),
    "until": Function(_until, (INT,)),
    "compact": Function(lambda v: [x for x in v or [] if not _empty(x)], (LIST,)),
    "uniq": Function(lambda v: [x for i, x in enumerate(v or []) if x not in (v or [])[:i]], (LIST,)),
}


def _mul(a: Any, rest: tuple[Any, ...]) -> int:
    out = _to_int(a)
    for x in rest:
        out *= _to_int(x)
    return out


SPRIG_FUNCTIONS = {"sprig_" + name: fn for name, fn in SPRIG.items()}
