"""Variable values from defaults, NOMAD_VAR_*, var files and -var, in Nomad's precedence, with
types and validation; locals in any order (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest

from drover.jobspec import JobspecError, parse

SPEC = """
variable "image" {
  type    = string
  default = "app:1"
}
variable "count" {
  type    = number
  default = 1
  validation {
    condition     = var.count < 10
    error_message = "Too many."
  }
}
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
variable "labels" {
  default = { team = "a" }
}
locals {
  full = "${local.prefix}-${var.image}"
  prefix = upper("x")
}
job "j" {
  datacenters = var.dcs
  meta        = merge(var.labels, { image = local.full })
  group "g" {
    count = var.count
    task "t" { driver = "mock" }
  }
}
"""


def job(**kwargs: Any) -> tuple[Any, ...]:
    out = parse(SPEC, filename="j.nomad.hcl", **kwargs)
    group = out["TaskGroups"][0]
    return out["Meta"]["image"], group["Count"], out["Datacenters"], out["Meta"]["team"]


PRECEDENCE = [
    ({}, ("X-app:1", 1, ["dc1"], "a")),
    ({"env": {"NOMAD_VAR_image": "env:2", "NOMAD_VAR_count": "3", "OTHER": "x"}}, ("X-env:2", 3, ["dc1"], "a")),
    ({"env": {"NOMAD_VAR_dcs": '["e1", "e2"]'}}, ("X-app:1", 1, ["e1", "e2"], "a")),
    ({"env": {"NOMAD_VAR_image": "env:2"}, "var_files": [("a.hcl", 'image = "file:3"\ncount = 4\n')]},
     ("X-file:3", 4, ["dc1"], "a")),
    ({"var_files": [("a.hcl", 'image = "a"\n'), ("b.hcl", 'image = "b"\nlabels = { team = "b" }\n')]},
     ("X-b", 1, ["dc1"], "b")),
    ({"variables": {"image": "cli:4", "count": "5"}, "var_files": [("a.hcl", 'image = "file"\n')],
      "env": {"NOMAD_VAR_image": "env"}}, ("X-cli:4", 5, ["dc1"], "a")),
    ({"variables": {"dcs": '["c1"]', "labels": '{ team = "c" }'}}, ("X-app:1", 1, ["c1"], "c")),
]  # fmt: skip


@pytest.mark.parametrize(("given", "expected"), PRECEDENCE)
def test_variable_precedence(given: dict[str, Any], expected: tuple[Any, ...]) -> None:
    assert job(**given) == expected


FAILURES = [
    ({"variables": {"count": "12"}}, "j.nomad.hcl:10: variable[count].validation: invalid value for variable 'count' (from -var): Too many."),
    ({"variables": {"count": "many"}}, "-var:1: count: invalid value for variable 'count': a number is required"),
    ({"variables": {"nope": "1"}}, '-var:1: nope: there is no variable named "nope"'),
    ({"var_files": [("v.hcl", "nope = 1\n")]}, 'v.hcl:1: nope: there is no variable named "nope"'),
    ({"var_files": [("v.hcl", 'variable "x" {}\n')]}, "v.hcl:1: variable: a var file only assigns values"),
    ({"var_files": [("v.hcl", "count = [1]\n")]}, "v.hcl:1: count: a number is required, not a list"),
    ({"var_files": [("v.hcl", "count = \n")]}, "v.hcl:1: syntax:"),
    ({"env": {"NOMAD_VAR_dcs": "[unclosed"}}, "environment variable NOMAD_VAR_dcs:1: dcs: invalid value"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("given", "problem"), FAILURES, ids=[f[1].split(":")[0] + str(i) for i, f in enumerate(FAILURES)]
)
def test_bad_variable_values(given: dict[str, Any], problem: str) -> None:
    with pytest.raises(JobspecError) as raised:
        parse(SPEC, filename="j.nomad.hcl", **given)
    assert any(p.startswith(problem) for p in raised.value.problems), raised.value.problems


def test_locals_that_refer_to_themselves_are_a_problem() -> None:
    src = 'locals {\n  a = local.b\n  b = local.a\n}\njob "j" {\n  group "g" { task "t" { driver = "mock" } }\n}\n'
    with pytest.raises(JobspecError, match=r'local "a" refers to itself'):
        parse(src)


def test_every_problem_is_reported_not_just_the_first() -> None:
    src = 'job "j" {\n  priority = "high"\n  group "g" {\n    count = -\n  }\n}\n'
    with pytest.raises(JobspecError) as raised:
        parse(src)
    assert raised.value.problems[0].startswith("job.nomad.hcl:4: syntax:")
    src = 'job "j" {\n  priority = "high"\n  group "g" {\n    count = "x"\n    bogus = 1\n  }\n}\n'
    with pytest.raises(JobspecError) as raised:
        parse(src)
    assert [p.split(": ")[0] for p in raised.value.problems] == [
        "job.nomad.hcl:2",
        "job.nomad.hcl:4",
        "job.nomad.hcl:5",
    ]
    assert str(raised.value) == "\n".join(raised.value.problems)


# Each refused with a problem rather than left to take the parser's memory or time.
EXHAUSTING = [
    ("(" * 5000 + "1" + ")" * 5000, "job.nomad.hcl:1: job: expressions or blocks nested too deep"),
    ("pow(10, 1000000)", "job.nomad.hcl:1: locals.x: pow(): the result is not a finite number"),
    ('format("%099999999d", 1)', "job.nomad.hcl:1: locals.x: format(): width 99999999 is too large (at most 1024)"),
    ('format("%.5000f", 1)', "job.nomad.hcl:1: locals.x: format(): precision 5000 is too large (at most 1024)"),
    ("range(0, 100000)", "job.nomad.hcl:1: locals.x: range(): more than 1024 values were generated; "
     "either decrease the difference between start and end or use a smaller step"),
    ("setproduct(range(100), range(100), range(100))",
     "job.nomad.hcl:1: locals.x: setproduct(): the product would have 1000000 elements (at most 100000)"),
    ('bcrypt("x", 31)', "job.nomad.hcl:1: locals.x: bcrypt(): a cost of 31 would take too long (at most 16 here)"),
    (f'parseint("{"1" * 5000}", 10)', "job.nomad.hcl:1: locals.x: parseint(): more than 4300 digits"),
    ('yamldecode("a: &a [1,1,1,1,1,1,1,1,1,1]\\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\\n'
     'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\\n'
     'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]")',
     "job.nomad.hcl:1: locals.x: yamldecode(): the document stands for more than 100000 values"),
]  # fmt: skip


@pytest.mark.parametrize(("expr", "problem"), EXHAUSTING)
def test_what_would_exhaust_the_parser_is_refused(expr: str, problem: str) -> None:
    with pytest.raises(JobspecError) as raised:
        parse(f'locals {{ x = {expr} }}\njob "j" {{}}\n')
    assert raised.value.problems == [problem]


def test_the_older_variables_block_declares_with_defaults() -> None:
    src = 'variables {\n  image = "a:1"\n  count = 2\n}\njob "j" {\n  group "g" {\n    count = var.count\n    task "t" {\n      driver = "docker"\n      config { image = var.image }\n    }\n  }\n}\n'
    job = parse(src, variables={"count": "3"})
    assert job["TaskGroups"][0]["Count"] == 3
    assert job["TaskGroups"][0]["Tasks"][0]["Config"] == {"image": "a:1"}


def test_a_driver_config_in_block_or_argument_form() -> None:
    block = 'job "j" {\n group "g" {\n  task "t" {\n   driver = "docker"\n   config {\n    image = "a"\n    labels = { x = "1" }\n    mount {\n     type = "bind"\n    }\n    port_map "p" {\n     http = 80\n    }\n   }\n  }\n }\n}\n'
    config = parse(block)["TaskGroups"][0]["Tasks"][0]["Config"]
    # As Nomad reads it: an object written in place, and each nested block, as a list of objects.
    assert config == {
        "image": "a",
        "labels": [{"x": "1"}],
        "mount": [{"type": "bind"}],
        "port_map": [{"p": [{"http": 80}]}],
    }
    argument = (
        block.replace("config {", "config = {")
        .replace("mount {", "mount = {")
        .replace('port_map "p" {', "port_map = {")
    )
    config = parse(argument)["TaskGroups"][0]["Tasks"][0]["Config"]
    assert config == {"image": "a", "labels": {"x": "1"}, "mount": {"type": "bind"}, "port_map": {"http": 80}}
