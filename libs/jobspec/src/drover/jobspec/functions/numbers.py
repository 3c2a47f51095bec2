"""Number functions, and numbers written as Go's math/big writes them (format's %e, %f, %g).

cty reads a number literal into a 512-bit binary float and formats that exact value: a
decimal like 0.35 may lie a hair above or below its text, which decides how "%.1f" rounds it.
Drover keeps float64s, so the 512-bit value is rebuilt from the number's shortest text."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, number, takes, whole
from drover.jobspec.values import ConversionError
from drover.jobspec.values import number as hcl_number

# Digits of a number: value = 0.<mant> x 10**exp, no trailing zeros in mant ("" is zero).
Digits = tuple[str, int]
# Drover's bound on parseint's digits (Python's own for decimal text): past it, building the
# number digit by digit would only exhaust the parser.
_MAX_DIGITS = 4300


def shortest(x: int | float) -> Digits:
    """The fewest digits that give back `x` (its literal's digits, for a literal)."""
    if isinstance(x, int):
        text = str(abs(x))
        return (text.rstrip("0"), len(text)) if x else ("", 0)
    _, digits, exponent = Decimal(repr(abs(x))).as_tuple()
    text = "".join(map(str, digits)).lstrip("0")
    assert isinstance(exponent, int)
    return (text.rstrip("0"), len(text) + exponent) if text else ("", 0)


def exact(x: int | float) -> Digits:
    """Every digit of `x` as cty holds it: a float as the 512-bit float nearest its text."""
    if isinstance(x, int) or x == 0:
        return shortest(x)
    value = Fraction(Decimal(repr(abs(x))))
    top = value.numerator.bit_length() - value.denominator.bit_length()
    if value < Fraction(2) ** top:
        top -= 1
    scale = top - 511  # the mantissa takes 512 bits
    mantissa = round(value / Fraction(2) ** scale)  # to nearest, ties to even
    if scale >= 0:
        return shortest(mantissa << scale)
    digits = str(mantissa * 5**-scale)  # mantissa / 2**-scale = that / 10**-scale
    return digits.rstrip("0"), len(digits) + scale


def _round(d: Digits, n: int) -> Digits:
    """`d` rounded to its first `n` digits, an exact half to even (math/big's decimal.round)."""
    mant, exp = d
    if n < 0 or n >= len(mant):
        return d
    up = mant[n] > "5" or (mant[n] == "5" and (n + 1 < len(mant) or (n > 0 and int(mant[n - 1]) % 2 == 1)))
    if not up:
        kept = mant[:n].rstrip("0")
        return (kept, exp) if kept else ("", 0)
    while n > 0 and mant[n - 1] == "9":
        n -= 1
    if n == 0:
        return "1", exp + 1
    return mant[: n - 1] + str(int(mant[n - 1]) + 1), exp


def float_text(x: int | float, verb: str, precision: int | None) -> str:
    """`x` as math/big's Float.Text(verb, precision) writes it; None is the shortest that
    reads back (as %v and %g without a precision)."""
    sign = "-" if x < 0 else ""
    if precision is None:
        d = shortest(x)
        prec = {"e": len(d[0]) - 1, "f": max(len(d[0]) - d[1], 0)}.get(verb.lower(), len(d[0]))
    else:
        d, prec = exact(x), precision
        if verb in "eE":
            d = _round(d, 1 + prec)
        elif verb == "f":
            d = _round(d, d[1] + prec)
        else:
            prec = max(prec, 1)
            d = _round(d, prec)
    if verb in "eE":
        return sign + _e(d, verb, prec)
    if verb == "f":
        return sign + _f(d, prec)
    eprec = 6 if precision is None else prec
    if precision is not None and eprec > len(d[0]) >= d[1]:
        eprec = len(d[0])
    if not -4 <= d[1] - 1 < eprec:
        return sign + _e(d, "e" if verb == "g" else "E", min(prec, len(d[0])) - 1)
    if prec > d[1]:
        prec = len(d[0])
    return sign + _f(d, max(prec - d[1], 0))


def _e(d: Digits, e: str, prec: int) -> str:
    mant, exp = d
    head = mant[:1] or "0"
    tail = (mant[1 : prec + 1]).ljust(prec, "0")
    power = exp - 1 if mant else 0
    return f"{head}{'.' + tail if prec > 0 else ''}{e}{'-' if power < 0 else '+'}{abs(power):02d}"


def _f(d: Digits, prec: int) -> str:
    mant, exp = d
    whole_part = (mant[:exp].ljust(exp, "0")) if exp > 0 else "0"
    if prec <= 0:
        return whole_part
    fraction = "".join(mant[i] if 0 <= i < len(mant) else "0" for i in range(exp, exp + prec))
    return f"{whole_part}.{fraction}"


def _parseint(s: Any, base: Any) -> int:
    if not isinstance(s, str):
        raise FunctionError(f"first argument must be a string, not {_kind(s)}")
    b = whole(base, "base")
    if not 2 <= b <= 62:
        raise FunctionError("base must be a whole number between 2 and 62 inclusive")
    # Go's big.Int.SetString: an optional sign, then digits; past base 36 lower and upper case
    # letters are different digits (a is 10, A is 36), at most base 36 they are the same.
    text, negative = s, s.startswith("-")
    body = s[1:] if s[:1] in "+-" else s
    if len(body) > _MAX_DIGITS:
        raise FunctionError(f"more than {_MAX_DIGITS} digits")
    value = 0
    for c in body:
        digit = _digit(c, b)
        if digit is None:
            raise FunctionError(f'cannot parse "{text}" as a base {b} integer')
        value = value * b + digit
    if not body:
        raise FunctionError(f'cannot parse "{text}" as a base {b} integer')
    return -value if negative else value


def _digit(c: str, base: int) -> int | None:
    if "0" <= c <= "9":
        d = ord(c) - ord("0")
    elif "a" <= c <= "z":
        d = ord(c) - ord("a") + 10
    elif "A" <= c <= "Z":
        d = ord(c) - ord("A") + (10 if base <= 36 else 36)
    else:
        return None
    return d if d < base else None


def _kind(v: Any) -> str:
    return {bool: "bool", int: "number", float: "number", list: "tuple", dict: "object"}.get(type(v), "null")


def _log(x: Any, base: Any) -> int | float:
    try:
        return hcl_number(math.log(float(number(x, "num"))) / math.log(float(number(base, "base"))))
    except (ValueError, ZeroDivisionError, ConversionError):
        raise FunctionError("the result is not a finite number") from None


def _pow(x: Any, power: Any) -> int | float:
    # In floats, as cty's pow is: a huge integer power would take the parse forever.
    try:
        return hcl_number(float(number(x, "num")) ** float(number(power, "power")))
    except (OverflowError, ZeroDivisionError, ConversionError):
        raise FunctionError("the result is not a finite number") from None


def _signum(x: Any) -> int:
    n = whole(x, "num")
    return (n > 0) - (n < 0)


def _extreme(pick: Any) -> Fn:
    def fn(*nums: Any) -> Any:
        if not nums:
            raise FunctionError("must pass at least one number")
        return pick(number(n, "numbers") for n in nums)

    return takes(fn, rest="numbers")


def table() -> dict[str, Fn]:
    return {
        "abs": takes(lambda n: abs(number(n, "num")), "num"),
        "ceil": takes(lambda n: math.ceil(number(n, "num")), "num"),
        "floor": takes(lambda n: math.floor(number(n, "num")), "num"),
        "log": takes(_log, "num", "base"),
        "pow": takes(_pow, "num", "power"),
        "signum": takes(_signum, "num"),
        "parseint": takes(_parseint, "number", "base"),
        "min": _extreme(min),
        "max": _extreme(max),
    }
