"""Expressions, templates and functions evaluated as HCL evaluates them (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest

from drover.jobspec.context import Context
from drover.jobspec.errors import EvalError
from drover.jobspec.evaluate import evaluate
from drover.jobspec.functions import functions
from drover.jobspec.interpolation import known
from drover.jobspec.syntax import parse_body

VARS = {"n": 3, "name": "web", "tags": ["a", "b"], "ports": {"http": 80, "grpc": 90}, "flag": True}


def value(expr: str) -> Any:
    body = parse_body(f"x = {expr}\n", "t.hcl")
    ctx = Context("t.hcl", variables=VARS, functions=functions(None))
    return known(evaluate(body.attributes[0].expr, ctx))


CASES = [
    # literals and arithmetic
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("7 / 2", 3.5),
    ("8 / 2", 4),
    ("7 % 3", 1),
    ("-var.n", -3),
    ('"5" + 1', 6),
    ("1.5 * 2", 3),
    ("var.n > 2 && !false", True),
    ('var.n == 3 ? "yes" : "no"', "yes"),
    ('1 == "1"', False),
    ("null", None),
    # collections, references, splats
    ('["a", 1, true]', ["a", 1, True]),
    ('{ a = 1, "b.c" = 2 }', {"a": 1, "b.c": 2}),
    ("var.tags[1]", "b"),
    ("var.ports.http", 80),
    ('var.ports["grpc"]', 90),
    ("[{ a = 1 }, { a = 2 }][*].a", [1, 2]),
    # for expressions
    ("[for t in var.tags : upper(t)]", ["A", "B"]),
    ('[for i, t in var.tags : "${i}:${t}" if i > 0]', ["1:b"]),
    ("{ for k, v in var.ports : v => k }", {"80": "http", "90": "grpc"}),
    ('{ for s in ["a", "b", "a"] : s => s... }', {"a": ["a", "a"], "b": ["b"]}),
    # templates
    ('"${var.name}-${var.n + 1}"', "web-4"),
    ('"${var.n}"', 3),
    ('"a$${b}c"', "a${b}c"),
    ('"%{ if var.flag }on%{ else }off%{ endif }"', "on"),
    ('"%{ for t in var.tags }[${t}]%{ endfor }"', "[a][b]"),
    ('"x \\"q\\" \\u00e9"', 'x "q" é'),
    # runtime interpolations are left as text
    ('"${node.unique.name}"', "${node.unique.name}"),
    ('"host-${attr.unique.hostname}:${NOMAD_PORT_http}"', "host-${attr.unique.hostname}:${NOMAD_PORT_http}"),
    ("meta.rack", "${meta.rack}"),
    ('env["HOME"]', "${env['HOME']}"),
    ('upper("${node.class}")', "${NODE.CLASS}"),
    # function calls (the functions themselves: test_functions_*.py)
    ('try(var.ports.ssh, "none")', "none"),
    ("can(var.missing)", False),
    ("max([4, 2]...)", 4),
    ('"${var.tags}"', ["a", "b"]),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_expression_value(expr: str, expected: Any) -> None:
    got = value(expr)
    assert got == expected
    assert type(got) is type(expected)


ERRORS = [
    ("var.nope", 'there is no variable named "nope"'),
    ('1 + "x"', "a number is required, not the string 'x'"),
    ("nosuch(1)", 'there is no function named "nosuch"'),
    ("var.tags[5]", "index 5 is out of range"),
    ('"x${var.tags}"', "cannot be interpolated into a string"),
    ("node.class + 1", "only known at runtime"),
    ('upper("a", "b")', "upper(): expects only 1 argument, got 2"),
    ("1 / 0", "division by zero"),
    ('"%{ if true }x"', "is not closed"),
]


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_expression_error(expr: str, message: str) -> None:
    with pytest.raises(EvalError) as raised:
        value(expr)
    assert message in raised.value.message
    assert raised.value.line == 1


def test_heredocs() -> None:
    src = 'x = <<-EOT\n    a ${var.name}\n      b "q" \\n\n    EOT\ny = <<EOT\n  keep ${1 + 1}\nEOT\n'
    body = parse_body(src, "t.hcl")
    ctx = Context("t.hcl", variables=VARS, functions=functions(None))
    assert evaluate(body.attributes[0].expr, ctx) == 'a web\n  b "q" \\n\n'
    assert evaluate(body.attributes[1].expr, ctx) == "  keep 2\n"
