"""When periodic jobs launch: cron specs in cronexpr's layouts, several specs, time zones, DST,
Nomad's "test" spec type, and the one launch a dispatcher makes up for after downtime."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from drover.model import Job
from drover.model.job import PeriodicConfig
from drover.model.periodic import (
    SECOND,
    SpecError,
    cron_problem,
    latest_launch,
    next_launch,
    to_cronsim,
)


def ns(*parts: int, tz: str = "UTC") -> int:
    return int(datetime(*parts, tzinfo=ZoneInfo(tz)).timestamp()) * SECOND  # type: ignore[misc]


def cron(*specs: str, tz: str = "UTC") -> PeriodicConfig:
    return PeriodicConfig(specs=list(specs), time_zone=tz)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("*/5 * * * *", "*/5 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@Hourly", "0 * * * *"),
        ("@weekly", "0 0 * * 0"),
        ("30 2 * * * *", "30 2 * * *"),  # cronexpr's six fields end with a year
        ("15 30 2 * * * *", "15 30 2 * * *"),  # seven: a second first, a year last
        ("0 0 ? * MON", "0 0 * * MON"),
    ],
)
def test_cronexpr_layouts_map_onto_cronsim(spec: str, want: str) -> None:
    assert to_cronsim(spec) == want


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("@fortnightly", "unknown schedule"),
        ("* * * *", "expected 5, 6 or 7 fields"),
        ("0 0 1 1 * 2030", "year field"),
        ("61 * * * *", "Bad minute"),
        ("0 0 1W * *", "Bad day-of-month"),
        ("every day", "expected 5, 6 or 7 fields"),
    ],
)
def test_specs_that_do_not_parse_say_why(spec: str, needle: str) -> None:
    why = cron_problem(spec)
    assert why is not None and needle in why, why


def test_a_spec_cronsim_cannot_take_is_refused_before_it() -> None:
    with pytest.raises(SpecError, match="year field"):
        to_cronsim("0 0 1 1 * 2030")


@pytest.mark.parametrize(
    ("periodic", "after", "want"),
    [
        # Strictly after: a launch time itself is not its own next.
        (cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 10, 6, 0)),
        (cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0) + 1, ns(2026, 1, 1, 10, 6, 0)),
        (cron("*/15 * * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 10, 15, 0)),
        # The earliest of several specs.
        (cron("0 12 * * *", "30 10 * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 10, 30, 0)),
        (cron("0 12 * * *", "30 10 * * *"), ns(2026, 1, 1, 10, 30, 0), ns(2026, 1, 1, 12, 0, 0)),
        # Read in the job's time zone: 02:00 in Berlin is 01:00 UTC in winter.
        (cron("0 2 * * *", tz="Europe/Berlin"), ns(2026, 1, 1, 0, 0, 0), ns(2026, 1, 1, 1, 0, 0)),
        # New York springs forward at 02:00 on 2026-03-08: 02:30 does not exist that day, and
        # Debian's cron runs it at once, at 03:00 (cronsim follows it).
        (
            cron("30 2 * * *", tz="America/New_York"),
            ns(2026, 3, 8, 1, 0, 0, tz="America/New_York"),
            ns(2026, 3, 8, 3, 0, 0, tz="America/New_York"),
        ),
        (cron("15 30 2 * * * *"), ns(2026, 1, 1, 0, 0, 0), ns(2026, 1, 1, 2, 30, 15)),
        # Nomad's test spec: listed unix times.
        (PeriodicConfig(spec="300,100,200", spec_type="test"), 150 * SECOND, 200 * SECOND),
        (PeriodicConfig(spec="100,200", spec_type="test"), 200 * SECOND, None),
    ],
)
def test_next_launch(periodic: PeriodicConfig, after: int, want: int | None) -> None:
    assert next_launch(periodic, after) == want


@pytest.mark.parametrize(
    ("periodic", "after", "until", "want"),
    [
        # Nothing fell due.
        (cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 10, 5, 59), None),
        # One due: exactly at its time, and later.
        (cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 10, 6, 0), ns(2026, 1, 1, 10, 6, 0)),
        (cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 10, 6, 30), ns(2026, 1, 1, 10, 6, 0)),
        # Many missed: only the last is made up for.
        (cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0), ns(2026, 1, 1, 13, 0, 30), ns(2026, 1, 1, 13, 0, 0)),
        (cron("0 * * * *", "30 * * * *"), ns(2026, 1, 1, 0, 0), ns(2026, 1, 1, 5, 45), ns(2026, 1, 1, 5, 30)),
        (cron("@daily"), ns(2026, 1, 1, 0, 0, 0), ns(2026, 1, 1, 23, 59, 59), None),
        (PeriodicConfig(spec="100,200,300", spec_type="test"), 100 * SECOND, 250 * SECOND, 200 * SECOND),
        (PeriodicConfig(spec="100,200,300", spec_type="test"), 300 * SECOND, 900 * SECOND, None),
    ],
)
def test_latest_launch_makes_up_for_one_missed_launch(
    periodic: PeriodicConfig, after: int, until: int, want: int | None
) -> None:
    assert latest_launch(periodic, after, until) == want


def test_launches_fall_on_whole_seconds() -> None:
    t = next_launch(cron("* * * * *"), ns(2026, 1, 1, 10, 5, 0) + 123_456_789)
    assert t is not None and t % SECOND == 0 and datetime.fromtimestamp(t // SECOND, UTC).second == 0


def test_the_periodic_block_reads_crons_and_writes_specs() -> None:
    job = Job.model_validate({"ID": "nightly", "Periodic": {"Crons": ["*/5 * * * *"]}})
    assert job.periodic is not None and job.periodic.specs == ["*/5 * * * *"]
    out = job.to_api()["Periodic"]
    assert out["Specs"] == ["*/5 * * * *"] and "Crons" not in out
    assert Job.model_validate(job.to_api()).periodic == job.periodic
