"""The number functions behave as cty's (table-driven): exact where cty is exact, in floats
where cty's are (log, pow), whole numbers where cty reads a Go int (signum)."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ("abs(-12.4)", 12.4),
    ("abs(3)", 3),
    ("ceil(5.1)", 6),
    ("ceil(5)", 5),
    ("floor(-4.9)", -5),
    ("log(16, 2)", 4),
    ("log(10, 10)", 1),
    ("pow(3, 2)", 9),
    ("pow(4, 0.5)", 2),
    ("pow(2, -1)", 0.5),
    ("signum(-13)", -1),
    ("signum(0)", 0),
    ('signum("7")', 1),
    ('parseint("100", 10)', 100),
    ('parseint("FF", 16)', 255),
    ('parseint("-10", 16)', -16),
    ('parseint("1011111011101111", 2)', 48879),
    ('parseint("aA", 62)', 656),  # past base 36, upper case letters are digits of their own
    ("min(12, 54, 3)", 3),
    ('max(12, "54", 3)', 54),
    ("max([12, 54, 3]...)", 54),
]

ERRORS = [
    ('abs("x")', "a number is required, not the string 'x'"),
    ("ceil(true)", "a number is required, not a bool"),
    ("log(0, 10)", "not a finite number"),
    ("pow(10, 400)", "not a finite number"),
    ("signum(0.5)", "a whole number is required, not 0.5"),
    ('parseint("12", 1)', "base must be a whole number between 2 and 62"),
    ("parseint(12, 10)", "first argument must be a string, not number"),
    ('parseint("1_000", 10)', 'cannot parse "1_000" as a base 10 integer'),
    ('parseint("g", 16)', 'cannot parse "g" as a base 16 integer'),
    ("max()", "must pass at least one number"),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_number_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_number_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
