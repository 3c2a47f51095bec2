"""formatdate and timeadd behave as cty's (table-driven): strict RFC 3339 in, the offset kept,
timeadd's result to the second."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ('formatdate("DD MMM YYYY hh:mm ZZZ", "2018-01-02T23:12:01Z")', "02 Jan 2018 23:12 UTC"),
    (
        'formatdate("EEEE, MMMM D, YY h:m:s aa H AA", "2018-01-02T03:12:01-08:00")',
        "Tuesday, January 2, 18 3:12:1 am 3 AM",
    ),
    (
        'formatdate("YYYY-MM-DD\'T\'hh:mm:ssZ ZZZZ ZZZZZ", "2023-11-05T15:04:05+05:30")',
        "2023-11-05T15:04:05+05:30 +0530 +05:30",
    ),
    ("formatdate(\"EEE 'o''clock' '' HH:mm\", \"2018-01-02T00:00:00Z\")", "Tue o'clock ' 12:00"),
    ('timeadd("2017-11-22T00:00:00Z", "10m")', "2017-11-22T00:10:00Z"),
    ('timeadd("2017-11-22T00:00:00.999999999+01:00", "-1.5h")', "2017-11-21T22:30:00+01:00"),
    ('timeadd("2017-11-22T00:00:00Z", "1h30m0.5s")', "2017-11-22T01:30:00Z"),
]

ERRORS = [
    ('formatdate("YYY", "2018-01-02T03:12:01Z")', 'invalid date format verb "YYY"'),
    ('formatdate("q", "2018-01-02T03:12:01Z")', 'invalid date format verb "q"'),
    ('formatdate("\'abc", "2018-01-02T03:12:01Z")', "unterminated literal '"),
    ('formatdate("YYYY", "2018-01-02")', "not a valid RFC 3339 timestamp"),
    ('formatdate("YYYY", "2018-01-02t03:12:01Z")', "not a valid RFC 3339 timestamp"),
    ('formatdate("YYYY", "2018-02-30T00:00:00Z")', "day is out of range for month"),
    ('timeadd("2017-11-22T00:00:00Z", "1d")', 'unknown unit "d" in duration "1d"'),
    ('timeadd("2017-11-22T00:00:00Z", "10")', 'missing unit in duration "10"'),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_date_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_date_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
