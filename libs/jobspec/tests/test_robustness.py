"""Whatever text it is handed, parse returns a job or raises JobspecError: never another
exception (the API turns a JobspecError into a 400, anything else would be a 500)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.jobspec import JobspecError, parse

PIECES = [
    'job "j" {', "}", "{", 'group "g" {', 'task "t" {', 'driver = "mock"', "count = ", "\n", " ", "var.x",
    "local.y", 'locals { y = ', 'variable "x" { default = ', "1", "1.5e3", '"s"', '"${', "%{ if true }",
    "%{ endif }", "[", "]", "(", ")", ",", "for v in [1] : v", "=>", "...", "?", ":", "+", "/", "0",
    "upper(", "format(", '"%d"', "sort([1, \"a\"])", 'regex_replace("x", "(", "")', 'yamldecode("',
    'cidrsubnets("10.0.0.0/8", ', 'formatdate("', "convert(", "list(string)", "<<EOT\n", "EOT\n", "<<-X\n",
    "dynamic \"port\" {", "for_each = ", "content {", "null", "true", "node.class", "${", "~}", "\\",
    "99999999999999999999999999999999", "-", "!", "&&", "||", "==", "$${", "#", "//", "/*", "*/",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_any_text_parses_or_is_a_jobspec_error(pieces: list[str]) -> None:
    src = "".join(pieces)
    try:
        job = parse(src)
    except JobspecError as e:
        assert e.problems and all(p.startswith("job.nomad.hcl:") for p in e.problems), e.problems
    else:
        assert isinstance(job["ID"], str)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_expression_evaluates_or_is_a_jobspec_error(expr: str) -> None:
    try:
        parse(f'locals {{\n  x = {expr}\n}}\njob "j" {{}}\n')
    except JobspecError as e:
        assert e.problems
