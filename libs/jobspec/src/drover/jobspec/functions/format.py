"""format and formatlist: Go's fmt verbs as cty reads them. A verb is
``%[flags][width][.precision][[argument]]verb``; %v writes strings and numbers as they are and
anything else as JSON, %s and %q a string, %t a bool, %d %b %o %x %X a whole number, %e %E %f
%g %G a number. Widths count user-perceived characters. An argument no verb used is an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.encoding import json_text
from drover.jobspec.functions.numbers import float_text
from drover.jobspec.functions.params import Fn, string, takes
from drover.jobspec.functions.strings import graphemes
from drover.jobspec.values import ConversionError, to_bool, to_number, to_string

_FLAGS = "-+# 0"
# Drover's bound on a width or precision: a larger one would only exhaust the parser.
_MAX_WIDTH = 1024


@dataclass
class _Verb:
    raw: str
    offset: int
    arg: int  # 1-based
    mode: str
    flags: str
    width: int | None
    precision: int | None


def format_verbs(spec: str, args: list[Any]) -> str:
    """`spec` with each verb replaced by its argument, as cty's format function writes it."""
    out: list[str] = []
    i, next_arg, highest = 0, 1, 0
    while i < len(spec):
        if spec[i] != "%":
            out.append(spec[i])
            i += 1
            continue
        if spec[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
            continue
        verb, i = _scan(spec, i, next_arg)
        highest = max(highest, verb.arg)
        out.append(_one(verb, args))
        next_arg = verb.arg + 1
    if highest < len(args):
        if highest == 0:
            raise FunctionError("too many arguments; no verbs in format string")
        raise FunctionError(f"too many arguments; only {highest} used by format string")
    return "".join(out)


def _scan(spec: str, start: int, arg: int) -> tuple[_Verb, int]:
    """The verb at `start` (its "%"), and where the text after it begins."""
    i = start + 1
    flags = ""
    while i < len(spec) and spec[i] in _FLAGS:
        flags += spec[i]
        i += 1
    width, i = _digits(spec, i, leading_zero=False)
    precision = None
    if spec[i : i + 1] == ".":
        digits, i = _digits(spec, i + 1, leading_zero=True)
        precision = digits or 0
    if spec[i : i + 1] == "[":
        explicit, i = _digits(spec, i + 1, leading_zero=False)
        if explicit is None or spec[i : i + 1] != "]":
            _bad(spec, i)
        arg, i = explicit, i + 1
    if i >= len(spec):
        raise FunctionError(f"invalid format string starting at offset {len(spec)}")
    for what, size in (("width", width), ("precision", precision)):
        if size is not None and size > _MAX_WIDTH:
            raise FunctionError(f"{what} {size} is too large (at most {_MAX_WIDTH})")
    if not spec[i].isascii() or not spec[i].isalpha():
        _bad(spec, i)
    return _Verb(spec[start : i + 1], start, arg, spec[i], flags, width, precision), i + 1


def _digits(spec: str, i: int, leading_zero: bool) -> tuple[Any, int]:
    start = i
    if not leading_zero and spec[i : i + 1] == "0":
        return None, i
    while i < len(spec) and spec[i].isascii() and spec[i].isdigit():
        i += 1
    return (int(spec[start:i]) if i > start else None), i


def _bad(spec: str, i: int) -> None:
    if i >= len(spec):
        raise FunctionError(f"invalid format string starting at offset {len(spec)}")
    raise FunctionError(f"unrecognized format character {spec[i]!r} at offset {i}")


def _one(verb: _Verb, args: list[Any]) -> str:
    if verb.arg > len(args):
        raise FunctionError(
            f"not enough arguments for {verb.raw!r} at {verb.offset}: "
            f"need index {verb.arg} but have {len(args)} total"
        )
    value = args[verb.arg - 1]
    if verb.mode != "v" and value is None:
        raise FunctionError(
            f"unsupported value for {verb.raw!r} at {verb.offset}: null value cannot be formatted"
        )
    try:
        if verb.mode == "v":
            return _as_is(verb, value)
        if verb.mode == "t":
            return "true" if to_bool(value) else "false"
        if verb.mode in "bdoxX":
            return _integer(verb, to_number(value))
        if verb.mode in "eEfgG":
            return _float(verb, to_number(value))
        if verb.mode in "sq":
            return _string(verb, to_string(value))
    except ConversionError as e:
        raise FunctionError(f"unsupported value for {verb.raw!r} at {verb.offset}: {e}") from None
    raise FunctionError(f"unsupported format verb {verb.mode!r} in {verb.raw!r} at offset {verb.offset}")


def _as_is(verb: _Verb, value: Any) -> str:
    if "#" not in verb.flags and isinstance(value, str):
        return _pad(verb, value)
    if "#" not in verb.flags and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _pad(verb, float_text(value, "g", None))
    return _pad(verb, json_text(value))


def _string(verb: _Verb, text: str) -> str:
    if verb.precision:
        text = "".join(graphemes(text)[: verb.precision])
    return _pad(verb, json_text(text) if verb.mode == "q" else text)


def _pad(verb: _Verb, text: str) -> str:
    missing = (verb.width or 0) - len(graphemes(text))
    if missing <= 0:
        return text
    pad = ("0" if "0" in verb.flags else " ") * missing
    return text + pad if "-" in verb.flags else pad + text


def _integer(verb: _Verb, n: int | float) -> str:
    # Go's big.Int formatting: a sign, a prefix for '#', zeros up to the precision, then the
    # field padded to the width (with zeros only when there is no precision).
    if isinstance(n, float):
        raise FunctionError(f"unsupported value for {verb.raw!r} at {verb.offset}: an integer is required")
    digits = format(abs(n), {"b": "b", "o": "o", "d": "d", "x": "x", "X": "X"}[verb.mode])
    sign = "-" if n < 0 else "+" if "+" in verb.flags else " " if " " in verb.flags else ""
    prefix = {"b": "0b", "o": "0", "x": "0x", "X": "0X"}.get(verb.mode, "") if "#" in verb.flags else ""
    zeros = 0
    if verb.precision is not None:
        if len(digits) < verb.precision:
            zeros = verb.precision - len(digits)
        elif digits == "0" and verb.precision == 0:
            return ""
    length = len(sign) + len(prefix) + zeros + len(digits)
    left = right = 0
    if verb.width is not None and length < verb.width:
        if "-" in verb.flags:
            right = verb.width - length
        elif "0" in verb.flags and verb.precision is None:
            zeros = verb.width - length
        else:
            left = verb.width - length
    return " " * left + sign + prefix + "0" * zeros + digits + " " * right


def _float(verb: _Verb, n: int | float) -> str:
    # Go's big.Float formatting: %e and %f default to 6 decimals, %g to the shortest; zeros
    # pad after the sign, and take precedence over '-'.
    mode = verb.mode
    precision = verb.precision if verb.precision is not None else (None if mode in "gG" else 6)
    body = float_text(n, mode, precision)
    sign = ""
    if body.startswith("-"):
        sign, body = "-", body[1:]
    elif "+" in verb.flags:
        sign = "+"
    elif " " in verb.flags:
        sign = " "
    padding = max((verb.width or 0) - len(sign) - len(body), 0)
    if "0" in verb.flags:
        return sign + "0" * padding + body
    if "-" in verb.flags:
        return sign + body + " " * padding
    return " " * padding + sign + body


def _format(spec: Any, *args: Any) -> str:
    return format_verbs(string(spec, "format"), list(args))


def _formatlist(spec: Any, *args: Any) -> list[str]:
    text = string(spec, "format")
    length, chooser = -1, 0
    for i, arg in enumerate(args):
        if isinstance(arg, list):
            if length == -1:
                length, chooser = len(arg), i
            elif len(arg) != length:
                raise FunctionError(
                    f"argument {i + 1} has length {len(arg)}, which is inconsistent with "
                    f"argument {chooser + 1} of length {length}"
                )
    out = []
    for n in range(max(length, 1) if length != 0 else 0):
        row = [a[n] if isinstance(a, list) else a for a in args]
        try:
            out.append(format_verbs(text, row))
        except FunctionError as e:
            raise FunctionError(f"error on format iteration {n}: {e}") from None
    return out


def table() -> dict[str, Fn]:
    return {
        "format": takes(_format, "format", rest="args"),
        "formatlist": takes(_formatlist, "format", rest="args"),
    }
