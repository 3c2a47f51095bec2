"""format and formatlist write as cty's do (table-driven): Go's verbs and flags, numbers as
math/big writes them (%v in Go's shortest %g form; a half rounds as the 512-bit value cty holds
lies), every argument used."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ('format("%s=%d (%05.1f) %q %v", "a", 7, 3.14159, "q", true)', 'a=7 (003.1) "q" true'),
    ('format("Hello, %s!", "Ander")', "Hello, Ander!"),
    ('format("%v|%v|%v|%v", 123456789, 1000000, 100000, 0.000012)', "1.23456789e+08|1e+06|100000|1.2e-05"),
    ('format("%v %v %#v", [1, "a"], { b = null }, "x")', '[1,"a"] {"b":null} "x"'),
    ('format("%-5s|%5s|%05s|%.2s|%3s", "ab", "cd", "ef", "hello", "é")', "ab   |   cd|000ef|he|  é"),
    (
        'format("%x %X %o %b %#x %+d % d %.3d %-4d|", 255, 255, 8, 5, 255, 3, 3, 7, 1)',
        "ff FF 10 101 0xff +3  3 007 1   |",
    ),
    (
        'format("%8.3f|%-9.2e|%g|%G|%e|%+.1f", 3.14159, 1234.5, 0.0001, 1e21, 0, 2)',
        "   3.142|1.23e+03 |0.0001|1E+21|0.000000e+00|+2.0",
    ),
    ('format("%.1f %.1f %.0f %.0f", 0.35, 0.25, 2.5, 3.5)', "0.3 0.2 2 4"),
    ('format("%[2]s %[1]s %s", "a", "b")', "b a b"),
    ('format("%t %d %s", "true", "12", 12)', "true 12 12"),
    ('format("100%% %q", "<a&b>")', '100% "\\u003ca\\u0026b\\u003e"'),
    ('formatlist("%s:%d", ["a", "b"], [1, 2])', ["a:1", "b:2"]),
    ('formatlist("%s-%s", ["a", "b"], "x")', ["a-x", "b-x"]),
    ('formatlist("%s", [])', []),
    ('formatlist("static")', ["static"]),
]

ERRORS = [
    ('format("%d", 1.5)', "an integer is required"),
    ('format("%s", [1])', "a string is required, not a list"),
    ('format("%d", null)', "null value cannot be formatted"),
    ('format("%y", 1)', "unsupported format verb 'y'"),
    ('format("%d")', "need index 1 but have 0 total"),
    ('format("abc", 1)', "too many arguments; no verbs in format string"),
    ('format("%s", "a", "b")', "too many arguments; only 1 used by format string"),
    ('format("50%")', "invalid format string starting at offset 3"),
    ('format("%[0]d", 1)', "unrecognized format character '0' at offset 2"),
    ('formatlist("%s", ["a"], ["b", "c"])', "argument 2 has length 2, which is inconsistent with argument 1"),
    ('formatlist("%d", ["a"])', "error on format iteration 0"),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_format(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_format_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
