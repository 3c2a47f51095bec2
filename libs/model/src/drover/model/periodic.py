"""When a periodic job launches: its cron specs read in its time zone (structs.PeriodicConfig.Next).

Cron expressions are evaluated by cronsim (pure Python, zoneinfo-aware, Debian cron's rules,
including its handling of DST transitions). Nomad parses them with gorhill/cronexpr, whose
layouts this module maps onto cronsim's: the predefined "@" schedules, five fields, six fields
(a trailing year) and seven (a leading second and a trailing year). A year other than "*" and
cronexpr's nearest-weekday "W" have no counterpart and are refused. The "test" spec type is
Nomad's too: a comma-separated list of unix times.

Times are nanoseconds since the epoch, as everywhere in the model; launches fall on whole
seconds."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, tzinfo

from cronsim import CronSim, CronSimError

from drover.model.job import PeriodicConfig

SECOND = 1_000_000_000
SPEC_CRON = "cron"
SPEC_TEST = "test"

# cronexpr's predefined schedules, in five fields.
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class SpecError(ValueError):
    """A periodic spec that cannot be evaluated; the message says why."""


def to_cronsim(spec: str) -> str:
    """`spec` in cronexpr's layout as the expression cronsim evaluates the same way."""
    text = spec.strip()
    if text.startswith("@"):
        if text.lower() not in _MACROS:
            raise SpecError(f"unknown schedule {text!r} (expected one of {', '.join(_MACROS)})")
        return _MACROS[text.lower()]
    fields = text.split()
    if len(fields) in (6, 7):
        if fields[-1] != "*":
            raise SpecError("a year field other than * is not supported")
        fields = fields[:-1]
    if len(fields) not in (5, 6):
        raise SpecError(f"expected 5, 6 or 7 fields or an @ schedule, got {len(text.split())}")
    # cronexpr reads "?" as "*" in the day fields; cronsim knows only "*".
    return " ".join("*" if f == "?" else f for f in fields)


def cron_problem(spec: str) -> str | None:
    """Why `spec` is not a cron expression Drover can evaluate; None if it is one."""
    try:
        CronSim(to_cronsim(spec), datetime(2000, 1, 1, tzinfo=UTC))
    except (SpecError, CronSimError) as e:
        return str(e)
    return None


def launch_times_problem(spec: str) -> str | None:
    """Why `spec` is not a comma-separated list of unix times; None if it is one."""
    try:
        _test_times(spec)
    except SpecError as e:
        return str(e)
    return None


def location(name: str) -> tzinfo:
    """The time zone a periodic block names. "" and "Local" are UTC: Drover's servers keep
    their clocks in UTC, and a schedule must not move with the host a leader runs on."""
    if name in ("", "UTC", "Local"):
        return UTC
    return zoneinfo.ZoneInfo(name)


def time_zone_exists(name: str) -> bool:
    try:
        location(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def specs(p: PeriodicConfig) -> list[str]:
    """The block's specs: `Spec` (cron) or `Specs` (crons)."""
    return [p.spec] if p.spec.strip() else [s for s in p.specs if s.strip()]


def next_launch(p: PeriodicConfig, after: int) -> int | None:
    """The first launch strictly after `after` (the earliest of the specs'); None if there is
    none (a test list run out, a cron with no match within cronsim's fifty years)."""
    found = [t for t in (_next(p, s, after) for s in specs(p)) if t is not None]
    return min(found, default=None)


def latest_launch(p: PeriodicConfig, after: int, until: int) -> int | None:
    """The last launch in (`after`, `until`]: the one a dispatcher that missed every launch
    since `after` makes up for (at most one, as Nomad's leader does); None if none fell due."""
    first = next_launch(p, after)
    if first is None or first > until:
        return None
    found = [t for t in (_last(p, s, until) for s in specs(p)) if t is not None and t > after]
    return max(found, default=first)


def _next(p: PeriodicConfig, spec: str, after: int) -> int | None:
    if p.spec_type == SPEC_TEST:
        return next((t for t in _test_times(spec) if t > after), None)
    it = CronSim(to_cronsim(spec), _at(after, location(p.time_zone)))
    try:
        return _ns(next(it))
    except StopIteration:
        return None


def _last(p: PeriodicConfig, spec: str, until: int) -> int | None:
    if p.spec_type == SPEC_TEST:
        return max((t for t in _test_times(spec) if t <= until), default=None)
    # cronsim iterates strictly before its start: start a second on to include `until`.
    it = CronSim(to_cronsim(spec), _at(until + SECOND, location(p.time_zone)), reverse=True)
    try:
        return _ns(next(it))
    except StopIteration:
        return None


def _at(ns: int, tz: tzinfo) -> datetime:
    """`ns` as a time in `tz`, cut to the whole second (launches fall on whole seconds)."""
    return datetime.fromtimestamp(ns // SECOND, tz)


def _ns(dt: datetime) -> int:
    return int(dt.timestamp()) * SECOND


def _test_times(spec: str) -> list[int]:
    out = []
    for part in spec.split(","):
        text = part.strip()
        if not text.lstrip("-").isdigit():
            raise SpecError(f"{text!r} is not a unix time in seconds")
        out.append(int(text) * SECOND)
    return sorted(out)
