"""Go's view of Python values: Go's type names, truth, printing (fmt's %v) and JSON (as
encoding/json writes it: sorted keys, HTML-safe, floats without a needless ``.0``)."""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from typing import Any


class _NoValue:
    """Go's invalid reflect.Value: what a missing map key yields; it prints "<no value>"."""

    _instance: _NoValue | None = None

    def __new__(cls) -> _NoValue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE: Any = _NoValue()


def go_type(value: Any) -> str:
    """The Go type a value stands for, as Go's errors name it."""
    if value is None or value is NO_VALUE:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    named = getattr(type(value), "go_type", None)
    if isinstance(named, str):
        return named
    if isinstance(value, list | tuple):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return type(value).__name__


def is_true(value: Any) -> bool:
    """Go's truth: false, 0, nil and empty strings, lists and maps are false; structs true."""
    if value is None or value is NO_VALUE:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | tuple | dict):
        return len(value) > 0
    return True


def _float_digits(f: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as f, and the decimal point's place."""
    _sign, digits, exp = Decimal(repr(abs(f))).as_tuple()
    text = "".join(str(d) for d in digits).rstrip("0") or "0"
    assert isinstance(exp, int)
    dp = len(digits) + exp
    if text == "0":
        dp = 1
    return text, dp


def _exp_text(exp: int) -> str:
    return ("e-" if exp < 0 else "e+") + f"{abs(exp):02d}"


def format_float_g(f: float) -> str:
    """Go's %v of a float64: the shortest 'g', in exponent form when the exponent is below -4
    or from 6 (1e+06)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    neg = "-" if math.copysign(1.0, f) < 0 else ""
    digits, dp = _float_digits(f)
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return neg + mant + _exp_text(exp)
    if dp <= 0:
        return neg + "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return neg + digits + "0" * (dp - len(digits))
    return neg + digits[:dp] + "." + digits[dp:]


def format_value(value: Any, top: bool = False) -> str:
    """fmt's %v of a value; at the top of an action nil and a missing key print "<no value>"."""
    if value is NO_VALUE or (top and value is None):
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float_g(value)
    if isinstance(value, str):
        return value
    if getattr(type(value), "go_stringer", False):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + " ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "map[" + " ".join(f"{format_value(k)}:{format_value(value[k])}" for k in sorted_keys(value)) + "]"
        )
    if dataclasses.is_dataclass(value):
        fields = [
            format_value(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name[:1].isupper()
        ]
        return "&{" + " ".join(fields) + "}"
    return str(value)


def sorted_keys(mapping: dict[Any, Any]) -> list[Any]:
    """A map's keys in Go's order (fmtsort: numbers by value, strings by bytes)."""
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=lambda k: (go_type(k), format_value(k)))


def to_plain(value: Any) -> Any:
    """A value as JSON sees it: a struct as the map of its exported fields."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name[:1].isupper()}
    return value


_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def json_string(s: str, escape_html: bool = True) -> str:
    out = ['"']
    for c in s:
        if c in _JSON_ESCAPES and (escape_html or c not in "<>&"):
            out.append(_JSON_ESCAPES[c])
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def json_float(f: float) -> str:
    """encoding/json's float64: 'f' form, or 'e' form below 1e-6 or from 1e21."""
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"json: unsupported value: {format_float_g(f)}")
    if f == int(f) and abs(f) < 1e21:
        return str(int(f)) if f or math.copysign(1.0, f) > 0 else "-0"
    a = abs(f)
    if a < 1e-6 or a >= 1e21:
        digits, dp = _float_digits(f)
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp = dp - 1
        return ("-" if f < 0 else "") + mant + "e" + ("-" if exp < 0 else "+") + str(abs(exp))
    return repr(f)


def to_json(value: Any, indent: str = "", level: int = 0, escape_html: bool = True) -> str:
    """Go's json.Marshal (or MarshalIndent when indent is given)."""
    value = to_plain(value)
    if value is None or value is NO_VALUE:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, str):
        return json_string(value, escape_html)
    pad = "\n" + indent * (level + 1) if indent else ""
    end = "\n" + indent * level if indent else ""
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [to_json(v, indent, level + 1, escape_html) for v in value]
        return "[" + pad + ("," + pad).join(items) + end + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        sep = ": " if indent else ":"
        items = [
            json_string(str(k), escape_html) + sep + to_json(value[k], indent, level + 1, escape_html)
            for k in sorted(value, key=str)
        ]
        return "{" + pad + ("," + pad).join(items) + end + "}"
    return json_string(format_value(value), escape_html)
