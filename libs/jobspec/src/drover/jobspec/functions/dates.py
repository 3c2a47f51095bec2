"""formatdate and timeadd: times given as RFC 3339 text (never the clock), as cty reads and
writes them. formatdate's verbs are letters repeated (YYYY, MM, DD, hh, mm, ss, EEE, ZZZZZ...);
other letters are an error, other characters are kept, and 'quoted' text is literal."""

from __future__ import annotations

import datetime
import re
from fractions import Fraction
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, takes

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([-+])(\d{2}):(\d{2}))",
    re.ASCII,
)
_DURATION_UNITS = {
    "ns": Fraction(1),
    "us": Fraction(1000),
    "µs": Fraction(1000),  # U+00B5 MICRO SIGN
    "μs": Fraction(1000),  # U+03BC GREEK SMALL LETTER MU
    "ms": Fraction(10**6),
    "s": Fraction(10**9),
    "m": Fraction(60 * 10**9),
    "h": Fraction(3600 * 10**9),
}


def parse_timestamp(text: str) -> tuple[datetime.datetime, int]:
    """An RFC 3339 timestamp, strictly ("T" and "Z" upper case, two-digit fields in range, a
    UTC offset up to 23:59), as the whole second and the nanoseconds after it."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise FunctionError(f'"{text}" is not a valid RFC 3339 timestamp (such as "2006-01-02T15:04:05Z")')
    year, month, day, hour, minute, second, fraction, z, sign, oh, om = m.groups()
    if not z and (int(oh) > 23 or int(om) > 59):
        raise FunctionError(f'not a valid RFC 3339 timestamp: the UTC offset of "{text}" is out of range')
    offset = 0 if z else (1 if sign == "+" else -1) * (int(oh) * 60 + int(om))
    nanos = int((fraction or "0")[:9].ljust(9, "0"))
    try:
        whole_second = datetime.datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            tzinfo=datetime.timezone(datetime.timedelta(minutes=offset)),
        )
    except ValueError as e:
        raise FunctionError(f'not a valid RFC 3339 timestamp: "{text}": {e}') from None
    return whole_second, nanos


def rfc3339(t: datetime.datetime) -> str:
    """`t` as Go's time.RFC3339 writes it: whole seconds, "Z" for UTC, else the offset."""
    offset = t.utcoffset() or datetime.timedelta(0)
    zone = "Z" if not offset else _offset(t, ":")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + zone


def _offset(t: datetime.datetime, colon: str) -> str:
    minutes = int((t.utcoffset() or datetime.timedelta(0)).total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}{colon}{abs(minutes) % 60:02d}"


def parse_go_duration(text: str) -> Fraction:
    """Go's time.ParseDuration, in nanoseconds: a sign, then numbers each with a unit ("1h30m",
    "-1.5s", "300ms"); "0" alone needs none."""
    s = text
    negative = s[:1] == "-"
    s = s[1:] if s[:1] in "+-" else s
    if s == "0":
        return Fraction(0)
    if not s:
        raise FunctionError(f'time: invalid duration "{text}"')
    total = Fraction(0)
    while s:
        m = re.match(r"(\d*)(?:\.(\d*))?", s, re.ASCII)
        assert m is not None
        whole_digits, fraction_digits = m.group(1), m.group(2)
        if not whole_digits and not fraction_digits:
            raise FunctionError(f'time: invalid duration "{text}"')
        s = s[m.end() :]
        unit = re.match(r"[^\d.]*", s)
        assert unit is not None
        name = unit.group(0)
        if not name:
            raise FunctionError(f'time: missing unit in duration "{text}"')
        if name not in _DURATION_UNITS:
            raise FunctionError(f'time: unknown unit "{name}" in duration "{text}"')
        s = s[len(name) :]
        value = Fraction(int(whole_digits or "0"))
        if fraction_digits:
            value += Fraction(int(fraction_digits), 10 ** len(fraction_digits))
        total += value * _DURATION_UNITS[name]
    if total >= 2**63:
        raise FunctionError(f'time: invalid duration "{text}"')
    return -total if negative else total


def _timeadd(timestamp: Any, duration: Any) -> str:
    t, nanos = parse_timestamp(string(timestamp, "timestamp"))
    # Go truncates a fraction of a nanosecond, and writes the time to the whole second.
    seconds = (nanos + int(parse_go_duration(string(duration, "duration")))) // 10**9
    try:
        return rfc3339(t + datetime.timedelta(seconds=seconds))
    except OverflowError:
        raise FunctionError("the time is out of range") from None


_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _formatdate(spec: Any, timestamp: Any) -> str:
    text = string(spec, "format")
    t, _ = parse_timestamp(string(timestamp, "time"))
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            literal, i = _quoted(text, i + 1)
            out.append(literal)
        elif c.isascii() and c.isalpha():
            j = i
            while j < len(text) and text[j] == c:
                j += 1
            out.append(_verb(text[i:j], t))
            i = j
        else:
            j = i
            while j < len(text) and text[j] != "'" and not (text[j].isascii() and text[j].isalpha()):
                j += 1
            out.append(text[i:j])
            i = j
    return "".join(out)


def _quoted(text: str, i: int) -> tuple[str, int]:
    out = []
    while i < len(text):
        if text[i] == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(text[i])
        i += 1
    raise FunctionError("unterminated literal '")


def _verb(token: str, t: datetime.datetime) -> str:
    c, n = token[0], len(token)
    hour12 = t.hour % 12 or 12
    verbs: dict[str, dict[int, str]] = {
        "Y": {2: f"{t.year % 100:02d}", 4: f"{t.year:04d}"},
        "M": {1: str(t.month), 2: f"{t.month:02d}", 3: _MONTHS[t.month - 1][:3], 4: _MONTHS[t.month - 1]},
        "D": {1: str(t.day), 2: f"{t.day:02d}"},
        "E": {3: _DAYS[t.weekday()][:3], 4: _DAYS[t.weekday()]},
        "h": {1: str(t.hour), 2: f"{t.hour:02d}"},
        "H": {1: str(hour12), 2: f"{hour12:02d}"},
        "A": {2: "AM" if t.hour < 12 else "PM"},
        "a": {2: "am" if t.hour < 12 else "pm"},
        "m": {1: str(t.minute), 2: f"{t.minute:02d}"},
        "s": {1: str(t.second), 2: f"{t.second:02d}"},
        "Z": {
            1: "Z" if not t.utcoffset() else _offset(t, ":"),
            3: "UTC" if not t.utcoffset() else _offset(t, ""),
            4: _offset(t, ""),
            5: _offset(t, ":"),
        },
    }
    if c not in verbs:
        raise FunctionError(f'invalid date format verb "{token}"')
    if n not in verbs[c]:
        forms = " or ".join(f'"{c * k}"' for k in verbs[c])
        raise FunctionError(f'invalid date format verb "{token}": use {forms}')
    return verbs[c][n]


def table() -> dict[str, Fn]:
    return {
        "formatdate": takes(_formatdate, "format", "time"),
        "timeadd": takes(_timeadd, "timestamp", "duration"),
    }
