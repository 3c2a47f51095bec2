"""Go's text/template semantics: each case a template, its data, and what Go renders."""

from __future__ import annotations

from typing import Any

import pytest

from drover.template import Call, render

DATA: dict[str, Any] = {
    "name": "web",
    "n": 3,
    "zero": 0,
    "f": 1.5,
    "t": True,
    "empty": "",
    "list": ["a", "b", "c"],
    "nums": [1, 2, 3],
    "nolist": [],
    "m": {"b": 2, "a": 1, "c": 3},
    "nested": {"inner": {"port": 8080}, "nil": None},
    "s": "Hello, World",
}

CASES: list[tuple[str, str]] = [
    # Text, trim markers, comments
    ("plain text", "plain text"),
    ("a  {{- .name -}}  b", "awebb"),
    ("a\n\n  {{- .name }}\n", "aweb\n"),
    ("{{ .name -}}\n\n  x", "webx"),
    ("a {{/* a comment */}} b", "a  b"),
    ("a {{- /* trimmed */ -}} b", "ab"),
    ("{{-3}}", "-3"),
    ("{{ 3 -}} {{- 4 }}", "34"),
    ('x{{""}}y', "xy"),
    # Values and printing
    ("{{ .name }}", "web"),
    ("{{ .n }}", "3"),
    ("{{ .f }}", "1.5"),
    ("{{ .t }}", "true"),
    ("{{ .list }}", "[a b c]"),
    ("{{ .m }}", "map[a:1 b:2 c:3]"),
    ("{{ .missing }}", "<no value>"),
    ("{{ .nested.inner.port }}", "8080"),
    ("{{ .nested.missing.deeper }}", "<no value>"),
    ("{{ 1.0 }}", "1"),
    ("{{ 1e6 }}", "1e+06"),
    ("{{ 100000.0 }}", "100000"),
    ("{{ 0x1F }}", "31"),
    ("{{ 0755 }}", "493"),
    ("{{ 1_000 }}", "1000"),
    ("{{ 'a' }}", "97"),
    ('{{ "a\\tb" }}', "a\tb"),
    ("{{ `raw\\n` }}", "raw\\n"),
    ("{{ true }} {{ false }}", "true false"),
    (
        "{{ . }}",
        "map[empty: f:1.5 list:[a b c] m:map[a:1 b:2 c:3] n:3 name:web nested:map[inner:map[port:8080] nil:<nil>] nolist:[] nums:[1 2 3] s:Hello, World t:true zero:0]",
    ),
    ("{{ $ | len }}", "12"),
    # Variables
    ("{{ $x := .name }}{{ $x }}", "web"),
    ("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}", "2"),
    ("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}", "2"),
    ("{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}", "21"),
    ("{{ with .nested }}{{ $.name }}{{ end }}", "web"),
    ("{{ $m := .nested }}{{ $m.inner.port }}", "8080"),
    ("{{ $x := .missing }}{{ $x }}", "<no value>"),
    # Pipelines
    ('{{ .name | printf "%s!" }}', "web!"),
    ('{{ "a" | printf "%s-%s" "b" }}', "b-a"),
    ("{{ (len .list) }}", "3"),
    ('{{ (index .nested "inner").port }}', "8080"),
    ('{{ .list | len | printf "%d items" }}', "3 items"),
    # if / else if / else
    ("{{ if .t }}yes{{ end }}", "yes"),
    ("{{ if .zero }}yes{{ else }}no{{ end }}", "no"),
    ("{{ if .empty }}a{{ else if .n }}b{{ else }}c{{ end }}", "b"),
    ("{{ if .empty }}a{{ else if .zero }}b{{ else }}c{{ end }}", "c"),
    ("{{ if .nolist }}a{{ else }}empty list is false{{ end }}", "empty list is false"),
    ("{{ if .missing }}a{{ else }}missing is false{{ end }}", "missing is false"),
    ("{{ if .nested }}struct-like map is true{{ end }}", "struct-like map is true"),
    ("{{ if and .t .n }}both{{ end }}", "both"),
    ("{{ if or .zero .empty }}x{{ else }}neither{{ end }}", "neither"),
    ("{{ and 1 0 2 }}", "0"),
    ('{{ or 0 "" "x" }}', "x"),
    ('{{ or 0 "" }}', ""),
    ("{{ and .t .name }}", "web"),
    ("{{ not .t }} {{ not .zero }}", "false true"),
    ("{{ if and false (index .nolist 5) }}x{{ else }}short-circuit{{ end }}", "short-circuit"),
    # with
    ("{{ with .nested.inner }}{{ .port }}{{ end }}", "8080"),
    ("{{ with .missing }}x{{ else }}none{{ end }}", "none"),
    ("{{ with .empty }}x{{ else with .name }}{{ . }}{{ end }}", "web"),
    ("{{ with $p := .nested.inner.port }}{{ $p }}{{ end }}", "8080"),
    # range
    ("{{ range .list }}{{ . }},{{ end }}", "a,b,c,"),
    ("{{ range $i, $e := .list }}{{ $i }}:{{ $e }} {{ end }}", "0:a 1:b 2:c "),
    ("{{ range $e := .list }}{{ $e }}{{ end }}", "abc"),
    ("{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}", "a=1;b=2;c=3;"),
    ("{{ range .m }}{{ . }}{{ end }}", "123"),
    ("{{ range .nolist }}x{{ else }}nothing{{ end }}", "nothing"),
    ("{{ range .missing }}x{{ else }}nil ranges nothing{{ end }}", "nil ranges nothing"),
    ("{{ range 3 }}{{ . }}{{ end }}", "012"),
    ("{{ range .nums }}{{ if eq . 2 }}{{ continue }}{{ end }}{{ . }}{{ end }}", "13"),
    ("{{ range .nums }}{{ if eq . 2 }}{{ break }}{{ end }}{{ . }}{{ end }}", "1"),
    (
        "{{ range $i, $e := .list }}{{ range $.nums }}{{ $e }}{{ . }}{{ end }} {{ end }}",
        "a1a2a3 b1b2b3 c1c2c3 ",
    ),
    ("{{ $i := 9 }}{{ range $i = .nums }}{{ end }}{{ $i }}", "3"),
    ("{{ range .list -}}\n  {{ . }}\n{{ end }}", "a\nb\nc\n"),
    # define / template / block
    ('{{ define "T" }}[{{ . }}]{{ end }}{{ template "T" .name }}', "[web]"),
    ('{{ define "T" }}{{ $ }}{{ end }}{{ template "T" 5 }}', "5"),
    ('{{ define "T" }}x{{ end }}{{ template "T" }}{{ template "T" }}', "xx"),
    ('{{ block "B" .n }}<{{ . }}>{{ end }}', "<3>"),
    ('{{ define "T" }}{{ .missing }}{{ end }}{{ template "T" }}', "<no value>"),
    # Builtins
    ("{{ len .s }}", "12"),
    ("{{ len .m }}", "3"),
    ("{{ index .list 1 }}", "b"),
    ('{{ index .m "b" }}', "2"),
    ('{{ index .m "zz" }}', "<no value>"),
    ('{{ index .nested "inner" "port" }}', "8080"),
    ('{{ index "abc" 0 }}', "97"),
    ("{{ slice .list 1 }}", "[b c]"),
    ("{{ slice .list 1 2 }}", "[b]"),
    ("{{ slice .s 0 5 }}", "Hello"),
    ('{{ eq 1 1 }} {{ eq 1 2 }} {{ eq "a" "b" "a" }}', "true false true"),
    ('{{ ne .name "web" }}', "false"),
    ("{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1 2 }} {{ ge 2 3 }}", "true true false false"),
    ('{{ lt "a" "b" }}', "true"),
    ("{{ lt 1.5 2.5 }}", "true"),
    ("{{ eq .missing nil }}", "true"),
    ("{{ eq .name nil }}", "false"),
    ('{{ print 1 2 "a" 3 "b" "c" }}', "1 2a3bc"),
    ('{{ println 1 "a" }}', "1 a\n"),
    ("{{ html \"<a href='x'>&\" }}", "&lt;a href=&#39;x&#39;&gt;&amp;"),
    ('{{ js "it\'s <b>" }}', "it\\'s \\u003Cb\\u003E"),
    ('{{ urlquery "a b&c=d/é" }}', "a+b%26c%3Dd%2F%C3%A9"),
    ("{{ print nil }}", "<nil>"),
    # printf verbs
    ('{{ printf "%s|%v|%d" "x" .list 42 }}', "x|[a b c]|42"),
    ('{{ printf "%q" "a\\"b" }}', '"a\\"b"'),
    ('{{ printf "%x %X %o %b" 255 255 8 5 }}', "ff FF 10 101"),
    ('{{ printf "%#x" 255 }}', "0xff"),
    ('{{ printf "%x" "hi" }}', "6869"),
    ('{{ printf "%5.2f|%-6d|%06d|%+d" 3.14159 42 42 42 }}', " 3.14|42    |000042|+42"),
    ('{{ printf "%f %e %g" 1.5 1500.0 0.000015 }}', "1.500000 1.500000e+03 1.5e-05"),
    ('{{ printf "%.3s|%5s|%-5s|" "abcdef" "ab" "ab" }}', "abc|   ab|ab   |"),
    ('{{ printf "%t %v" true false }}', "true false"),
    ('{{ printf "%c %U" 65 65 }}', "A U+0041"),
    ('{{ printf "%T %T %T %T" 1 1.5 "s" .list }}', "int float64 string []interface {}"),
    ('{{ printf "100%%" }}', "100%"),
    ('{{ printf "%d" "x" }}', "%!d(string=x)"),
    ('{{ printf "%s %s" "a" }}', "a %!s(MISSING)"),
    ('{{ printf "%s" "a" "b" }}', "a%!(EXTRA string=b)"),
    ('{{ printf "%*d" 5 42 }}', "   42"),
    ('{{ printf "%v" .m }}', "map[a:1 b:2 c:3]"),
    ('{{ printf "%d" .nums }}', "[1 2 3]"),
    ('{{ printf "%s" 5 }}', "%!s(int=5)"),
    ('{{ printf "%.2f" 2.0 }}', "2.00"),
    ('{{ printf "%v" 1e21 }}', "1e+21"),
    # Custom-looking text survives
    ('{{ "{{" }}not an action}}', "{{not an action}}"),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_renders_as_go(text: str, expected: str) -> None:
    assert render(text, Call(), name="t", data=DATA).text == expected


@pytest.mark.parametrize(
    ("text", "left", "right", "expected"),
    [
        ("[[ .name ]] {{ .name }}", "[[", "]]", "web {{ .name }}"),
        ("<% .name -%>  x", "<%", "%>", "webx"),
        ('((/* c */)) ((- " a " -)) z', "((", "))", " a z"),
        ("{{{ .n }}}", "{{{", "}}}", "3"),
    ],
)
def test_custom_delimiters(text: str, left: str, right: str, expected: str) -> None:
    assert render(text, Call(), left_delim=left, right_delim=right, data=DATA).text == expected


def test_missing_key_error_option() -> None:
    assert render("{{ .name }}", data=DATA, missing_key_error=True).text == "web"
