"""Timestamps that Nomad's JSON writes as RFC 3339 strings but the scheduler handles as Unix ns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

_ZERO = "0001-01-01T00:00:00Z"


def parse_time_ns(value: Any) -> int:
    """Accept Unix ns (int) or an RFC 3339 string (Nomad's zero time -> 0)."""
    if value is None or value == "" or value == _ZERO:
        return 0
    if isinstance(value, bool):
        raise ValueError("a time is an RFC 3339 string or Unix nanoseconds")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        frac_ns = 0
        # Python's fromisoformat keeps microseconds only; Nomad writes nanoseconds.
        if "." in text:
            head, _, rest = text.partition(".")
            digits = ""
            while rest and rest[0].isdigit():
                digits, rest = digits + rest[0], rest[1:]
            frac_ns = int((digits + "000000000")[:9]) if digits else 0
            text = head + rest
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        if dt.year <= 1:
            return 0
        return int(dt.timestamp()) * 1_000_000_000 + frac_ns
    raise ValueError("a time is an RFC 3339 string or Unix nanoseconds")


def format_time_ns(ns: int) -> str:
    """Unix ns -> RFC 3339 with nanoseconds, as Go marshals time.Time."""
    if ns <= 0:
        return _ZERO
    secs, frac = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(secs, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{frac:09d}Z" if frac else f"{base}Z"


RFC3339Ns = Annotated[int, BeforeValidator(parse_time_ns), PlainSerializer(format_time_ns, when_used="json")]
"""A time held as Unix ns, written in JSON as an RFC 3339 string."""
