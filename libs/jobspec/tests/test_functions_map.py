"""Drover offers every function of Nomad's jobspec function map (jobspec2's Functions), by the
names Nomad gives them, and no other (a jobspec Drover takes is one Nomad takes); each has
table-driven cases in a test_functions_<family>.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drover.jobspec.calls import FORMS
from drover.jobspec.context import Context
from drover.jobspec.errors import EvalError
from drover.jobspec.evaluate import evaluate
from drover.jobspec.functions import functions
from drover.jobspec.syntax import parse_body

# Nomad's map, whole: cty's standard library, HashiCorp's function libraries (cidr, crypto,
# encoding, filesystem, uuid), HCL's try and can, typeexpr's convert, cty-yaml's codec.
NOMAD_FUNCTIONS = [
    "abs", "abspath", "base64decode", "base64encode", "basename", "bcrypt", "can", "ceil",
    "chomp", "chunklist", "cidrhost", "cidrnetmask", "cidrsubnet", "cidrsubnets", "coalesce",
    "coalescelist", "compact", "concat", "contains", "convert", "csvdecode", "dirname",
    "distinct", "element", "file", "filebase64", "fileexists", "fileset", "flatten", "floor",
    "format", "formatdate", "formatlist", "indent", "index", "join", "jsondecode", "jsonencode",
    "keys", "length", "log", "lookup", "lower", "max", "md5", "merge", "min", "parseint",
    "pathexpand", "pow", "range", "regex_replace", "replace", "reverse", "rsadecrypt",
    "setintersection", "setproduct", "setunion", "sha1", "sha256", "sha512", "signum", "slice",
    "sort", "split", "strlen", "strrev", "substr", "timeadd", "title", "trim", "trimprefix",
    "trimspace", "trimsuffix", "try", "upper", "urlencode", "uuidv4", "uuidv5", "values",
    "yamldecode", "yamlencode", "zipmap",
]  # fmt: skip

# Their arguments are expressions (try, can) or a type (convert), not values: the evaluator
# takes them, not the function table.
EXPRESSION_FORMS = ["try", "can", "convert"]


def _value(expr: str) -> object:
    body = parse_body(f"x = {expr}\n", "t.hcl")
    return evaluate(body.attributes[0].expr, Context("t.hcl", functions=functions(None)))


def test_every_function_of_nomads_map_is_in_the_table() -> None:
    table = functions(None)
    missing = [name for name in NOMAD_FUNCTIONS if name not in table and name not in EXPRESSION_FORMS]
    assert missing == []


def test_the_table_and_the_forms_are_nomads_map_exactly() -> None:
    assert sorted(EXPRESSION_FORMS) == sorted(FORMS)
    assert sorted([*functions(None), *FORMS]) == sorted(NOMAD_FUNCTIONS)


def test_the_expression_forms_evaluate() -> None:
    assert _value('try(var.nope, "fallback")') == "fallback"
    assert _value("try(var.nope, 1, 2)") == 1
    assert _value("can(var.nope)") is False
    assert _value("can(1)") is True
    assert _value('convert(["a", 1], list(string))') == ["a", "1"]
    assert _value("convert({ a = 1 }, object({ a = string, b = optional(number) }))") == {"a": "1", "b": None}


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("try(var.nope)", "no argument could be evaluated"),
        ('convert("x", number)', "a number is required"),
        ("convert(1, nosuch)", "not a type"),
        ("convert({ a = 1 }, object({ a = optional(number, 2) }))", "takes only its type here"),
    ],
)
def test_the_expression_forms_refuse(expr: str, message: str) -> None:
    with pytest.raises(EvalError, match=message):
        _value(expr)


def test_every_function_has_cases() -> None:
    tests = Path(__file__).parent
    cases = "\n".join(
        p.read_text() for p in tests.glob("test_functions_*.py") if p.name != Path(__file__).name
    )
    cases += Path(__file__).read_text().split("def test_the_expression_forms_evaluate", 1)[1]
    untested = [name for name in NOMAD_FUNCTIONS if not re.search(rf"\b{name}\(", cases)]
    assert untested == []
