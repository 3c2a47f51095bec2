"""Durations are nanoseconds, as in Nomad's JSON; times are Unix nanoseconds."""

from __future__ import annotations

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE


_UNITS = {
    "ns": 1,
    "us": MICROSECOND,
    "µs": MICROSECOND,
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}


def parse_duration(value: object) -> int:
    """A duration in Go's form ("1m30s", "500ms", "1.5h") or as integer nanoseconds, in ns.
    Raises ValueError on anything else."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"not a duration: {value!r}")
    text, total, i = value.strip(), 0.0, 0
    sign = -1 if text.startswith("-") else 1
    text = text.lstrip("+-")
    if text == "0":
        return 0
    while i < len(text):
        j = i
        while j < len(text) and (text[j].isdigit() or text[j] == "."):
            j += 1
        k = j
        while k < len(text) and not (text[k].isdigit() or text[k] == "."):
            k += 1
        number, unit = text[i:j], text[j:k]
        if not number or unit not in _UNITS:
            raise ValueError(f"not a duration: {value!r} (use e.g. 10s, 500ms, 1m30s)")
        total += float(number) * _UNITS[unit]
        i = k
    return sign * round(total)


def format_duration(ns: int) -> str:
    """Nanoseconds as Go prints a time.Duration: ``0s``, ``500ms``, ``1.5s``, ``1m30s``, ``1h0m0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    n = abs(ns)
    if n < MICROSECOND:
        return f"{sign}{n}ns"
    if n < MILLISECOND:
        return f"{sign}{_decimal(n, MICROSECOND)}µs"
    if n < SECOND:
        return f"{sign}{_decimal(n, MILLISECOND)}ms"
    hours, rest = divmod(n, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    seconds = f"{_decimal(rest, SECOND)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _decimal(value: int, unit: int) -> str:
    """``value / unit`` written exactly, without trailing zeros (1500, 1000 -> "1.5")."""
    whole, frac = divmod(value, unit)
    if frac == 0:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(width, '0').rstrip('0')}"
