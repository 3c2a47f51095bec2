"""The encoding functions read and write as Nomad's do (table-driven): base64, URL query
escaping, JSON as Go writes it, CSV by Go's rules, YAML as cty's codec resolves and emits it."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ('base64encode("Hello World")', "SGVsbG8gV29ybGQ="),
    ('base64decode("SGVsbG8gV29ybGQ=")', "Hello World"),
    ('base64decode("SGVsbG8g\\nV29ybGQ=")', "Hello World"),  # Go skips line breaks
    ('urlencode("Hello World/é~&")', "Hello+World%2F%C3%A9~%26"),
    (
        'jsonencode({ b = [1, "x", 1.5, null, true], a = "<&>" })',
        '{"a":"\\u003c\\u0026\\u003e","b":[1,"x",1.5,null,true]}',
    ),
    ('jsonencode("é\\n")', '"é\\n"'),
    ("jsonencode(1e21)", "1000000000000000000000"),
    ('jsondecode("{\\"a\\": [1, 2.5, true, null]}")', {"a": [1, 2.5, True, None]}),
    ('jsondecode("1e3")', 1000),
    ('csvdecode("a,b\\n1,2\\n3,4\\n")', [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]),
    (
        'csvdecode("a,b\\r\\n\\"x,y\\",\\"q\\"\\"q\\"\\n\\n5,6")',
        [{"a": "x,y", "b": 'q"q'}, {"a": "5", "b": "6"}],
    ),
    ('csvdecode("a,b\\n")', []),
    (
        "yamldecode(\"a: 1\\nb: [yes, off, ~, 0x1F, 0o17, 012, 1.5, '3', 1_000, 2001-12-14]\")",
        {"a": 1, "b": [True, False, None, 31, 15, 12, 1.5, "3", "1_000", "2001-12-14T00:00:00Z"]},
    ),
    (
        'yamldecode("t: 2001-12-14 21:59:43.10\\nu: 2001-12-14t21:59:43-05:00")',
        {"t": "2001-12-14T21:59:43Z", "u": "2001-12-14T21:59:43-05:00"},
    ),
    ('yamldecode("a: &x {k: v}\\nb:\\n  <<: *x\\n  c: d")', {"a": {"k": "v"}, "b": {"k": "v", "c": "d"}}),
    ('yamldecode("1: a\\ntrue: b")', {"1": "a", "true": "b"}),
    ('yamldecode("!!str 123")', "123"),
    ('yamldecode("---")', None),
    (
        'yamlencode({ a = "b", c = [1, true, null], d = "x\\ny", e = {}, f = [] })',
        '"a": "b"\n"c":\n- 1\n- true\n- null\n"d": |-\n  x\n  y\n"e": {}\n"f": []\n',
    ),
    ('yamlencode("")', '""\n'),
    ("yamlencode(true)", "true\n...\n"),
    ('yamlencode(["é"])', '- "é"\n'),
]

ERRORS = [
    ('base64decode("SGk")', "failed to decode base64 data 'SGk'"),
    ('base64decode("/w==")', "not valid UTF-8"),
    ('jsondecode("{")', "not valid JSON"),
    ('jsondecode("NaN")', "NaN is not a JSON value"),
    ('jsondecode("{\\"a\\":1,\\"a\\":2}")', 'duplicate "a" property'),
    ('csvdecode("")', "missing header line"),
    ('csvdecode("a,a\\n1,2")', 'duplicate column name "a"'),
    ('csvdecode("a,b\\n1\\n")', "CSV parse error on line 2: wrong number of fields"),
    ('csvdecode("a\\nx\\"y\\n")', 'CSV parse error on line 2: bare " in non-quoted-field'),
    ('yamldecode("")', "missing start of document"),
    ('yamldecode("a: 1\\n---\\nb: 2")', "unexpected extra content after value"),
    ('yamldecode("!foo x")', 'unsupported tag "!foo"'),
    ('yamldecode("a: [")', "not valid YAML"),
    ('yamldecode("? [a]\\n: b")', "only strings are allowed as mapping keys"),
    ('yamldecode("a: *nope")', 'reference to undefined anchor "nope"'),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_encoding_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_encoding_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
