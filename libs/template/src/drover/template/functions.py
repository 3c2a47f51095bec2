"""consul-template's helper functions (no Consul, no Vault, no I/O): strings, numbers, JSON,
encodings, hashes, collections, ``env`` and ``file`` through the render's Call, ``timestamp``
at the Call's time."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from typing import Any

from drover.template.context import Call
from drover.template.registry import ANY, LIST, STRING, STRINGS, Function
from drover.template.values import NO_VALUE, go_type, to_json


def _env(call: Call, name: str) -> str:
    call.use("env", name)
    return call.env.get(name, "")


def _must_env(call: Call, name: str) -> str:
    value = _env(call, name)
    if not value:
        raise ValueError(f"required environment variable {name} is empty")
    return value


def _env_or_default(call: Call, name: str, default: str) -> str:
    call.use("env", name)
    return call.env.get(name, default)


def _file(call: Call, path: str) -> str:
    if not path:
        return ""
    dep = call.use("file", path.strip())
    content = call.read_file(path.strip()) if call.read_file is not None else None
    if content is None:
        call.miss(dep)
        return ""
    return content


def _parse_bool(s: str) -> bool:
    if s == "":
        return False
    if s in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if s in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'parseBool: strconv.ParseBool: parsing "{s}": invalid syntax')


def _parse_int(s: str) -> int:
    if s == "":
        return 0
    if not re.fullmatch(r"[+-]?\d+", s):
        raise ValueError(f'parseInt: strconv.ParseInt: parsing "{s}": invalid syntax')
    value = int(s)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f'parseInt: strconv.ParseInt: parsing "{s}": value out of range')
    return value


def _parse_float(s: str) -> float:
    if s == "":
        return 0.0
    try:
        return float(s.replace("_", "") if "_" not in s else "x")
    except ValueError:
        raise ValueError(f'parseFloat: strconv.ParseFloat: parsing "{s}": invalid syntax') from None


def _go_json(value: Any) -> Any:
    """JSON decoded as Go's interface{}: every number a float64."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return [_go_json(v) for v in value]
    return {k: _go_json(v) for k, v in value.items()}


def _parse_json(s: str) -> Any:
    if s == "":
        return {}
    try:
        return _go_json(json.loads(s))
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid character at offset {e.pos}: {e.msg}") from None


def _split(sep: str, s: str) -> list[str]:
    s = s.strip()
    if not s:
        return []
    return list(s) if sep == "" else s.split(sep)


def _go_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(re.sub(r"\(\?P<", "(?P<", pattern))
    except re.error as e:
        raise ValueError(f"error parsing regexp: {e}") from None


def _regex_replace_all(pattern: str, replacement: str, s: str) -> str:
    # Go's $1 / ${name} in the replacement; Python's \1 / \g<name>.
    repl = re.sub(
        r"\$\{(\w+)\}|\$(\w+)",
        lambda m: "\\g<" + (m.group(1) or m.group(2)) + ">",
        replacement.replace("\\", "\\\\"),
    )
    return _go_regex(pattern).sub(repl, s)


def _in(container: Any, value: Any) -> bool:
    if isinstance(container, list | tuple):
        for item in container:
            if type(item) is type(value) and item == value:
                return True
            if isinstance(item, int | float) and isinstance(value, int | float) and type(item) is type(value):
                return bool(item == value)
        return False
    if isinstance(container, str):
        return isinstance(value, str) and value in container
    return False


def _contains_some(ret_true: bool, invert: bool) -> Function:
    def check(values: list[Any], container: Any) -> bool:
        for v in values or []:
            if _in(container, v) != invert:
                return not ret_true
        return ret_true

    return Function(check, (LIST, ANY))


def _title(s: str) -> str:
    out = []
    prev_letter = False
    for c in s:
        out.append(c.upper() if not prev_letter else c)
        prev_letter = c.isalnum() or c in "'_"
    return "".join(out)


def _indent(spaces: int, s: str) -> str:
    if spaces < 0:
        raise ValueError("indent value must be a positive integer")
    pad = " " * spaces
    return "".join(pad + line if line and line != "\n" else line for line in s.splitlines(keepends=True))


def _loop(*args: Any) -> list[int]:
    if len(args) not in (1, 2):
        raise ValueError(f"loop: wrong number of arguments, expected 1 or 2, but got {len(args)}")
    bounds = [0, *args] if len(args) == 1 else list(args)
    ints: list[int] = []
    for b in bounds:
        if isinstance(b, int) and not isinstance(b, bool):
            ints.append(b)
        elif isinstance(b, str):
            ints.append(_parse_int(b))
        else:
            raise ValueError(f"loop: bad argument type: {go_type(b)}")
    return list(range(ints[0], ints[1]))


def _number(name: str, v: Any) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f'{name}: unknown type for "{v}" ({go_type(v)})')
    return v


def _math(name: str, op: Any) -> Function:
    def run(b: Any, a: Any) -> Any:
        return op(_number(name, a), _number(name, b))

    return Function(run, (ANY, ANY))


def _divide(a: int | float, b: int | float) -> int | float:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ValueError("runtime error: integer divide by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _modulo(a: int | float, b: int | float) -> int:
    if isinstance(a, float) or isinstance(b, float):
        raise ValueError(f'modulo: unknown type for "{a}" ({go_type(a)})')
    if b == 0:
        raise ValueError("runtime error: integer divide by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _key_pairs(pairs: Any, name: str) -> list[tuple[str, Any]]:
    out = []
    for p in pairs or []:
        key = getattr(p, "Key", None)
        if key is None and isinstance(p, dict):
            key = p.get("Key")
        value = getattr(p, "Value", None) if not isinstance(p, dict) else p.get("Value")
        if not isinstance(key, str):
            raise ValueError(f"{name}: wrong argument type {go_type(p)}")
        out.append((key, value))
    return out


def _by_key(pairs: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for p in pairs or []:
        key = p["Key"] if isinstance(p, dict) else p.Key
        top, _, rest = key.partition("/")
        if rest:
            out.setdefault(top, {})[rest] = {**p, "Key": rest} if isinstance(p, dict) else p
    return out


def _by_tag(services: Any) -> dict[str, list[Any]]:
    if services is None:
        return {}
    if not isinstance(services, list | tuple):
        raise ValueError(f"byTag: wrong argument type {go_type(services)}")
    out: dict[str, list[Any]] = {}
    for s in services:
        tags = getattr(s, "Tags", None) if not isinstance(s, dict) else s.get("Tags")
        for t in tags or []:
            out.setdefault(t, []).append(s)
    return out


def _explode(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in _key_pairs(pairs, "explode"):
        node = out
        parts = key.split("/")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f'explode: not a map: "{key}": "{part}" already has value "{child}"')
            node = child
        if parts[-1]:
            node[parts[-1]] = value
    return out


def _timestamp(call: Call, *args: str) -> str:
    from drover.template.timefmt import go_time_format

    if len(args) > 1:
        raise ValueError(f"timestamp: wrong number of arguments, expected 0 or 1, but got {len(args)}")
    if args and args[0] == "unix":
        return str(int(call.now.timestamp()))
    return go_time_format(call.now, args[0] if args else "2006-01-02T15:04:05Z07:00")


def _b64decode(name: str, altchars: bytes | None) -> Function:
    def run(s: str) -> str:
        try:
            return base64.b64decode(s, altchars=altchars, validate=True).decode(errors="replace")
        except ValueError as e:
            raise ValueError(f"{name}: illegal base64 data: {e}") from None

    return Function(run, (STRING,))


def _sc(fn: Any, n: int = 1) -> Function:
    return Function(fn, (STRING,) * n)


HELPERS: dict[str, Function] = {
    "env": Function(_env, (STRING,), needs_call=True),
    "mustEnv": Function(_must_env, (STRING,), needs_call=True),
    "envOrDefault": Function(_env_or_default, (STRING, STRING), needs_call=True),
    "file": Function(_file, (STRING,), needs_call=True),
    "toJSON": Function(lambda v: to_json(v), (ANY,)),
    "toJSONPretty": Function(lambda v: to_json(v, "  "), (ANY,)),
    "toUnescapedJSON": Function(lambda v: to_json(v, escape_html=False), (ANY,)),
    "toUnescapedJSONPretty": Function(lambda v: to_json(v, "  ", escape_html=False), (ANY,)),
    "parseJSON": _sc(_parse_json),
    "parseInt": _sc(_parse_int),
    "parseUint": _sc(lambda s: abs(_parse_int(s)) if not s.startswith("-") else _parse_int("x")),
    "parseFloat": _sc(_parse_float),
    "parseBool": _sc(_parse_bool),
    "split": _sc(_split, 2),
    "splitToMap": _sc(
        lambda a, b, s: dict(p.split(b, 1) for p in s.strip().split(a) if b in p) if s.strip() else {}, 3
    ),
    "join": Function(lambda sep, items: sep.join(items or []), (STRING, STRINGS)),
    "replaceAll": _sc(lambda f, t, s: s.replace(f, t), 3),
    "regexReplaceAll": _sc(_regex_replace_all, 3),
    "regexMatch": _sc(lambda p, s: _go_regex(p).search(s) is not None, 2),
    "contains": Function(lambda v, container: _in(container, v), (ANY, ANY)),
    "in": Function(_in, (ANY, ANY)),
    "containsAll": _contains_some(True, True),
    "containsAny": _contains_some(False, False),
    "containsNone": _contains_some(True, False),
    "containsNotAll": _contains_some(False, True),
    "toLower": _sc(str.lower),
    "toUpper": _sc(str.upper),
    "toTitle": _sc(_title),
    "trimSpace": _sc(lambda s: s.strip(" \t\n\r\v\f")),
    "trim": _sc(lambda cut, s: s.strip(cut), 2),
    "trimPrefix": _sc(lambda p, s: s[len(p) :] if p and s.startswith(p) else s, 2),
    "trimSuffix": _sc(lambda p, s: s[: -len(p)] if p and s.endswith(p) else s, 2),
    "base64Encode": _sc(lambda s: base64.b64encode(s.encode()).decode()),
    "base64Decode": _b64decode("base64Decode", None),
    "base64URLEncode": _sc(lambda s: base64.urlsafe_b64encode(s.encode()).decode()),
    "base64URLDecode": _b64decode("base64URLDecode", b"-_"),
    "sha256Hex": _sc(lambda s: hashlib.sha256(s.encode()).hexdigest()),
    "md5sum": _sc(lambda s: hashlib.md5(s.encode()).hexdigest()),
    "hmacSHA256Hex": _sc(lambda m, k: hmac.new(k.encode(), m.encode(), hashlib.sha256).hexdigest(), 2),
    "add": _math("add", lambda a, b: a + b),
    "subtract": _math("subtract", lambda a, b: a - b),
    "multiply": _math("multiply", lambda a, b: a * b),
    "divide": _math("divide", _divide),
    "modulo": _math("modulo", _modulo),
    "minimum": _math("minimum", lambda a, b: a if a < b else b),
    "maximum": _math("maximum", lambda a, b: a if a > b else b),
    "loop": Function(_loop, (), ANY),
    "indent": Function(_indent, ("int", STRING)),
    "byKey": Function(_by_key, (ANY,)),
    "byTag": Function(_by_tag, (ANY,)),
    "explode": Function(_explode, (ANY,)),
    "explodeMap": Function(lambda m: _explode_map(m), (ANY,)),
    "timestamp": Function(_timestamp, (), STRING, needs_call=True),
    "scratch": Function(lambda call: _Scratch(call.scratch), (), needs_call=True),
}


def _explode_map(m: Any) -> dict[str, Any]:
    if not isinstance(m, dict):
        raise ValueError(f"explodeMap: wrong argument type {go_type(m)}")
    return _explode([{"Key": k, "Value": m[k]} for k in sorted(m)])


class _Scratch:
    """consul-template's scratch: a render-wide map (``scratch.Set``, ``.Get``, ``.Key``...)."""

    go_type = "*template.Scratch"
    go_methods = ("Key", "Get", "Set", "SetX", "MapSet", "MapSetX", "MapValues")

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def Key(self, k: str) -> bool:
        return k in self.values

    def Get(self, k: str) -> Any:
        return self.values.get(k, NO_VALUE)

    def Set(self, k: str, v: Any) -> str:
        self.values[k] = v
        return ""

    def SetX(self, k: str, v: Any) -> str:
        self.values.setdefault(k, v)
        return ""

    def MapSet(self, k: str, mk: str, v: Any) -> str:
        self.values.setdefault(k, {})[mk] = v
        return ""

    def MapSetX(self, k: str, mk: str, v: Any) -> str:
        self.values.setdefault(k, {}).setdefault(mk, v)
        return ""

    def MapValues(self, k: str) -> list[Any]:
        m = self.values.get(k) or {}
        return [m[x] for x in sorted(m)]

    Key.go_params = (STRING,)  # type: ignore[attr-defined]
    Get.go_params = (STRING,)  # type: ignore[attr-defined]
    Set.go_params = (STRING, ANY)  # type: ignore[attr-defined]
    SetX.go_params = (STRING, ANY)  # type: ignore[attr-defined]
    MapSet.go_params = (STRING, STRING, ANY)  # type: ignore[attr-defined]
    MapSetX.go_params = (STRING, STRING, ANY)  # type: ignore[attr-defined]
    MapValues.go_params = (STRING,)  # type: ignore[attr-defined]
