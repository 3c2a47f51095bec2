"""The string functions behave as cty's (table-driven): characters are user-perceived ones,
case maps one character to one, `replace` is literal and `regex_replace` takes Go's syntax."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ('upper("hello, wörld")', "HELLO, WÖRLD"),
    ('upper("straße")', "STRAßE"),  # Go maps one character to one: ß has no single upper case
    ('lower("HELLO Ünïcode")', "hello ünïcode"),
    ('title("hello wORLD-foo_bar o\'neil")', "Hello WORLD-Foo_bar O'Neil"),
    ('chomp("hello\\r\\n\\n")', "hello"),
    ('chomp("hello\\n world")', "hello\n world"),
    ('trimspace("\\u00a0 hello \\n")', "hello"),
    ('trim("?!hello?!", "!?")', "hello"),
    ('trimprefix("helloworld", "hello")', "world"),
    ('trimprefix("helloworld", "world")', "helloworld"),
    ('trimsuffix("helloworld", "world")', "hello"),
    ('indent(2, "[\\n  foo,\\n]")', "[\n    foo,\n  ]"),
    ('split(",", "a,,b")', ["a", "", "b"]),
    ('split(",", "")', [""]),
    ('split("", "abc")', ["a", "b", "c"]),
    ('join(", ", ["a", 1, true])', "a, 1, true"),
    ('join("-", ["a"], ["b", "c"])', "a-b-c"),
    ('replace("a.b.c", ".", "/")', "a/b/c"),
    # Nomad's replace is cty's: a /pattern/ is not a regular expression there.
    ('replace("v1.2", "/v(\\\\d+).*/", "x")', "v1.2"),
    ('regex_replace("v1.2.3", "v(\\\\d+).*", "major-$1")', "major-1"),
    ('regex_replace("hello world", "(?P<first>\\\\w+) (\\\\w+)", "$${2}, $first! $$")', "world, hello! $"),
    ('regex_replace("a\\nb\\n", "b$", "X")', "a\nb\n"),  # $ is the end of the text in Go
    ('regex_replace("abc", "[[:alpha:]]", "x")', "xxx"),
    ('strlen("héllo")', 5),
    ('strlen("e\\u0301")', 1),  # e and a combining accent: one character
    ('substr("hello world", 1, 4)', "ello"),
    ('substr("hello world", -5, -1)', "world"),
    ('substr("hello", 10, 2)', ""),
    ('substr("🤔🤷", 0, 1)', "🤔"),
    ('strrev("hello👍🏽")', "👍🏽olleh"),
    ('reverse("hello")', "olleh"),  # Nomad's reverse is cty's string reversal too
]

ERRORS = [
    ('upper(["a"])', "a string is required, not a list"),
    ("upper(null)", "a string is required, not null"),
    ('upper("a", "b")', "expects only 1 argument, got 2"),
    ('indent(-1, "a")', "out of range"),
    ('join(",")', "at least one list is required"),
    ('join(",", ["a", null])', "element 1 is null"),
    ('split(",")', 'expects 2 arguments; "str" is missing'),
    ('regex_replace("a", "(", "")', "error parsing regexp"),
    ('substr("hello", 0.5, 1)', "a whole number is required, not 0.5"),
    ('reverse(["a", "b"])', "a string is required, not a list"),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_string_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_string_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
