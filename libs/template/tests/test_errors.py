"""Errors worded as Go's: parse errors with the template's name and line, execution errors with
line, column and the node at fault; check() listing every problem."""

from __future__ import annotations

import pytest

from drover.template import ExecError, ParseError, check, parse, render

PARSE_ERRORS: list[tuple[str, str]] = [
    ('{{ foo "x" }}', 'template: t:1: function "foo" not defined'),
    ("a\nb\n{{ nope }}", 'template: t:3: function "nope" not defined'),
    ("{{ $x }}", 'template: t:1: undefined variable "$x"'),
    (
        "{{ if .a }}x{{ end }}{{ $y := 1 }}{{ if .a }}{{ $z := 2 }}{{ end }}{{ $z }}",
        'template: t:1: undefined variable "$z"',
    ),
    ("{{ if .a }}\nno end", "template: t:2: unexpected EOF"),
    ("{{ end }}", "template: t:1: unexpected {{end}}"),
    ("{{ else }}", "template: t:1: unexpected {{else}}"),
    ("{{ .a", "template: t:1: unclosed action"),
    ('{{ "abc }}', "template: t:1: unterminated quoted string"),
    ("{{ /* x */ }}", 'template: t:1: unexpected "/" in command'),
    ("{{/* never closed", "template: t:1: unclosed comment"),
    ("{{ break }}", "template: t:1: {{break}} outside {{range}}"),
    ("{{ continue }}", "template: t:1: {{continue}} outside {{range}}"),
    ("{{ }}", "template: t:1: missing value for command"),
    ("{{ if }}{{ end }}", "template: t:1: missing value for if"),
    ("{{ .a | 3 }}", "template: t:1: non executable command in pipeline stage 2"),
    ("{{ (.a }}", "template: t:1: unclosed left paren"),
    ("{{ - }}", 'template: t:1: illegal number syntax: "-"'),
    ("{{ .a-}}", "template: t:1: bad character U+002D '-'"),
    ("{{ 99999999999999999999 }}", 'template: t:1: integer overflow: "99999999999999999999"'),
    ('{{ range $x := "a very long string" := }}', 'template: t:1: unexpected ":=" in operand'),
    ("{{ .a\n\n", "template: t:3: unclosed action started at t:1"),
    ("{{ .a) }}", "template: t:1: unexpected right paren"),
    ("{{ 3x }}", 'template: t:1: bad number syntax: "3x"'),
    ("{{ template .a }}", 'template: t:1: unexpected ".a" in template clause'),
    ("{{ range $a, $b, $c := .x }}{{ end }}", "template: t:1: too many declarations in range"),
    ('{{ "a".b }}', "template: t:1: unexpected . after term '\"a\"'"),
    ("{{ range .x }}{{ else if .y }}{{ end }}", "template: t:1: unexpected <if> in input"),
    ("{{ if .a }}{{ else }}{{ else }}{{ end }}", "template: t:1: expected end; found {{else}}"),
]


@pytest.mark.parametrize(("text", "message"), PARSE_ERRORS, ids=[c[0][:40] for c in PARSE_ERRORS])
def test_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text, "t")
    assert str(raised.value) == message


EXEC_ERRORS: list[tuple[str, str]] = [
    ("{{ .a.b }}", 'template: t:1:3: executing "t" at <.a.b>: nil pointer evaluating interface {}.b'),
    ("{{ .n.x }}", 'template: t:1:3: executing "t" at <.n.x>: can\'t evaluate field x in type int'),
    (
        "{{ index .l 5 }}",
        'template: t:1:3: executing "t" at <index .l 5>: error calling index: index out of range: 5',
    ),
    (
        "{{ index .n 0 }}",
        'template: t:1:3: executing "t" at <index .n 0>: error calling index: can\'t index item of type int',
    ),
    (
        '{{ eq 1 "a" }}',
        'template: t:1:3: executing "t" at <eq 1 "a">: error calling eq: incompatible types for comparison',
    ),
    (
        "{{ lt 1 1.5 }}",
        'template: t:1:3: executing "t" at <lt 1 1.5>: error calling lt: incompatible types for comparison',
    ),
    (
        "{{ lt true false }}",
        'template: t:1:3: executing "t" at <lt true false>: error calling lt: invalid type for comparison',
    ),
    ("{{ len 3 }}", 'template: t:1:3: executing "t" at <len 3>: error calling len: len of type int'),
    ("{{ toUpper 3 }}", 'template: t:1:11: executing "t" at <3>: expected string; found 3'),
    (
        "{{ toUpper .n }}",
        'template: t:1:11: executing "t" at <.n>: wrong type for value; expected string; got int',
    ),
    ("{{ toUpper .zz }}", 'template: t:1:11: executing "t" at <.zz>: invalid value; expected string'),
    (
        "{{ toUpper }}",
        'template: t:1:3: executing "t" at <toUpper>: wrong number of args for toUpper: want 1 got 0',
    ),
    (
        '{{ split "," }}',
        'template: t:1:3: executing "t" at <split>: wrong number of args for split: want 2 got 1',
    ),
    ('{{ template "x" }}', 'template: t:1:12: executing "t" at <{{template "x"}}>: template "x" not defined'),
    ("{{ .n 1 }}", 'template: t:1:3: executing "t" at <.n>: n is not a method but has arguments'),
    ("{{ 1 2 }}", 'template: t:1:3: executing "t" at <1>: can\'t give argument to non-function 1'),
    ("{{ nil }}", 'template: t:1:3: executing "t" at <nil>: nil is not a command'),
    (
        '{{ range "abc" }}{{ end }}',
        'template: t:1:9: executing "t" at <"abc">: range can\'t iterate over abc',
    ),
    (
        "{{ range $i, $e := 3 }}{{ end }}",
        'template: t:1:19: executing "t" at <3>: can\'t use 3 to iterate over more than one variable',
    ),
    (
        '{{ parseInt "x" }}',
        'template: t:1:3: executing "t" at <parseInt "x">: error calling parseInt: parseInt: strconv.ParseInt: parsing "x": invalid syntax',
    ),
    ("a\nb {{ .a.b }}", 'template: t:2:5: executing "t" at <.a.b>: nil pointer evaluating interface {}.b'),
    (
        '{{ define "sub" }}\n{{ .a.b }}{{ end }}{{ template "sub" . }}',
        'template: t:2:3: executing "sub" at <.a.b>: nil pointer evaluating interface {}.b',
    ),
]


@pytest.mark.parametrize(("text", "message"), EXEC_ERRORS, ids=[c[0][:40] for c in EXEC_ERRORS])
def test_exec_error(text: str, message: str) -> None:
    with pytest.raises(ExecError) as raised:
        render(text, name="t", data={"a": None, "n": 1, "l": [1]})
    assert str(raised.value) == message


def test_missing_key_error_names_the_key() -> None:
    with pytest.raises(ExecError) as raised:
        render("\n{{ .nope }}", name="t", data={}, missing_key_error=True)
    assert str(raised.value) == 'template: t:2:3: executing "t" at <.nope>: map has no entry for key "nope"'
    assert (raised.value.line, raised.value.column) == (2, 3)


def test_check_lists_every_unknown_function_and_the_syntax_error() -> None:
    problems = check('{{ foo }}\n{{ env "X" }}\n{{ bar 1 }}\n{{ if }}', name="app.conf")
    assert problems == [
        'template: app.conf:1: function "foo" not defined',
        'template: app.conf:3: function "bar" not defined',
        "template: app.conf:4: missing value for if",
    ]


def test_check_takes_the_known_functions_and_delimiters() -> None:
    assert check("<< mine >> {{ nope }}", "<<", ">>", frozenset({"mine"})) == []
    assert check("<< nope >>", "<<", ">>", frozenset({"mine"})) == [
        'template: :1: function "nope" not defined'
    ]


def test_a_clean_template_has_no_problems() -> None:
    assert check('{{ range nomadService "db" }}{{ .Address }}:{{ .Port }}{{ end }}') == []
