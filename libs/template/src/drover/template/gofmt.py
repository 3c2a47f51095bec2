"""Go's fmt.Sprint, Sprintln and Sprintf over Python values: the verbs templates use (%v %+v
%s %q %d %x %X %o %b %c %U %e %E %f %F %g %G %t %T %%), flags (``+ - # 0`` and space), width
and precision (``*`` too), and Go's in-band errors (``%!d(string=x)``, ``%!s(MISSING)``,
``%!(EXTRA int=1)``)."""

from __future__ import annotations

import math
import re
from typing import Any

from drover.template.values import NO_VALUE, _exp_text, _float_digits, format_float_g, format_value, go_type

_SPEC = re.compile(r"%([-+# 0]*)(\*|\d+)?(?:\.(\*|\d*))?(.?)", re.S)


def sprint(args: list[Any]) -> str:
    """Spaces between operands when neither side is a string."""
    out: list[str] = []
    prev_string = False
    for i, a in enumerate(args):
        is_string = isinstance(a, str)
        if i and not is_string and not prev_string:
            out.append(" ")
        out.append(format_value(None if a is NO_VALUE else a))
        prev_string = is_string
    return "".join(out)


def sprintln(args: list[Any]) -> str:
    return " ".join(format_value(None if a is NO_VALUE else a) for a in args) + "\n"


def go_quote(s: str) -> str:
    """strconv.Quote: a double-quoted Go string literal, non-printables escaped."""
    out = ['"']
    for c in s:
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif c == "\a":
            out.append("\\a")
        elif c == "\b":
            out.append("\\b")
        elif c == "\f":
            out.append("\\f")
        elif c == "\v":
            out.append("\\v")
        elif not c.isprintable():
            code = ord(c)
            out.append(
                f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            )
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _bad(verb: str, value: Any) -> str:
    if value is None or value is NO_VALUE:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({go_type(value)}={format_value(value)})"


def _float_fixed(f: float, prec: int) -> str:
    return f"{f:.{prec}f}"


def _float_exp(f: float, prec: int, upper: bool) -> str:
    text = f"{f:.{prec}e}"
    mant, _, exp = text.partition("e")
    out = mant + _exp_text(int(exp))
    return out.upper() if upper else out


def _float_g(f: float, prec: int | None, upper: bool) -> str:
    if prec is None:
        out = format_float_g(f)
    else:
        p = prec or 1
        digits, dp = _float_digits(float(f"{f:.{p - 1}e}"))
        exp = dp - 1
        out = (
            _float_exp(f, len(digits) - 1, False)
            if exp < -4 or exp >= p
            else f"{float(f'{f:.{p - 1}e}'):.{max(len(digits) - dp, 0)}f}"
        )
    return out.upper() if upper else out


def _format_number(value: Any, verb: str, flags: str, prec: int | None) -> str | None:
    """An int or float under a numeric verb, with its sign; None when the verb does not fit."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        n = value
        body: str
        if verb in "dv":
            body = str(abs(n))
        elif verb in "xX":
            body = f"{abs(n):x}" if verb == "x" else f"{abs(n):X}"
            if "#" in flags:
                body = ("0x" if verb == "x" else "0X") + body
        elif verb == "o":
            body = f"{abs(n):o}" if "#" not in flags else "0" + f"{abs(n):o}"
        elif verb == "O":
            body = "0o" + f"{abs(n):o}"
        elif verb == "b":
            body = f"{abs(n):b}"
        elif verb in "eEfFgG":
            return None
        else:
            return None
        if prec is not None:
            body = body.rjust(prec, "0")
        sign = "-" if n < 0 else "+" if "+" in flags else " " if " " in flags else ""
        return sign + body
    if isinstance(value, float):
        if verb in "vgG":
            out = _float_g(value, prec, verb == "G")
        elif verb in "fF":
            out = _float_fixed(value, 6 if prec is None else prec)
        elif verb in "eE":
            out = _float_exp(value, 6 if prec is None else prec, verb == "E")
        else:
            return None
        if math.isinf(value) or math.isnan(value):
            out = format_float_g(value)
        if not out.startswith("-") and ("+" in flags or " " in flags) and out[0] != "+":
            out = ("+" if "+" in flags else " ") + out
        return out
    return None


def format_one(value: Any, verb: str, flags: str = "", prec: int | None = None) -> str:
    """One operand under one verb (without width)."""
    if value is NO_VALUE:
        value = None
    if verb == "T":
        return "<nil>" if value is None else go_type(value)
    if verb == "v":
        number = _format_number(value, "v", flags, prec) if isinstance(value, float | int) else None
        if number is not None:
            return number
        if "+" in flags and not isinstance(value, int | float | str | bool | list | dict):
            return format_value(value)
        if "#" in flags and isinstance(value, str):
            return go_quote(value)
        return format_value(value)
    if isinstance(value, list | tuple) and verb not in "sqxX":
        return "[" + " ".join(format_one(v, verb, flags, prec) for v in value) + "]"
    if verb == "t":
        return ("true" if value else "false") if isinstance(value, bool) else _bad(verb, value)
    if verb in "sq" or (verb in "xX" and isinstance(value, str)):
        text: str | None = None
        if isinstance(value, str):
            text = value
        elif getattr(type(value), "go_stringer", False):
            text = str(value)
        elif isinstance(value, list | tuple) and verb in "sq":
            return "[" + " ".join(format_one(v, verb, flags, prec) for v in value) + "]"
        elif verb == "q" and isinstance(value, int) and not isinstance(value, bool):
            return "'" + chr(value) + "'"
        if text is None:
            return _bad(verb, value)
        if prec is not None:
            text = text[:prec]
        if verb == "s":
            return text
        if verb == "q":
            return "`" + text + "`" if "#" in flags and "`" not in text else go_quote(text)
        hexed = text.encode().hex()
        return hexed.upper() if verb == "X" else hexed
    if verb == "c":
        return chr(value) if isinstance(value, int) and not isinstance(value, bool) else _bad(verb, value)
    if verb == "U":
        if isinstance(value, int) and not isinstance(value, bool):
            return f"U+{value:04X}"
        return _bad(verb, value)
    number = _format_number(value, verb, flags, prec)
    return number if number is not None else _bad(verb, value)


def _pad(text: str, width: int | None, flags: str, numeric: bool) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text.ljust(width)
    if "0" in flags:
        sign = text[0] if numeric and text[:1] in "+- " else ""
        return sign + text[len(sign) :].rjust(width - len(sign), "0")
    return text.rjust(width)


def sprintf(fmt: str, args: list[Any]) -> str:
    out: list[str] = []
    argi = 0
    i = 0
    while i < len(fmt):
        j = fmt.find("%", i)
        if j < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:j])
        m = _SPEC.match(fmt, j)
        assert m is not None
        flags, width_s, prec_s, verb = m.groups()
        i = m.end()
        width: int | None = None
        prec: int | None = None
        if width_s == "*":
            if argi < len(args) and isinstance(args[argi], int):
                width = args[argi]
                if width < 0:
                    flags += "-"
                    width = -width
            else:
                out.append("%!(BADWIDTH)")
            argi += 1
        elif width_s:
            width = int(width_s)
        if prec_s == "*":
            if argi < len(args) and isinstance(args[argi], int):
                prec = args[argi]
            else:
                out.append("%!(BADPREC)")
            argi += 1
        elif prec_s is not None:
            prec = int(prec_s or "0")
        if not verb:
            out.append("%!(NOVERB)")
            break
        if verb == "%":
            out.append("%")
            continue
        if argi >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        value = args[argi]
        argi += 1
        text = format_one(value, verb, flags, prec)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        out.append(_pad(text, width, flags, numeric))
    if argi < len(args):
        extra = ", ".join(
            "<nil>" if a is None or a is NO_VALUE else f"{go_type(a)}={format_value(a)}" for a in args[argi:]
        )
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)
