"""Plain HCL documents (an agent's configuration) read as plain data, on the same parse and
evaluation as jobspecs."""

from __future__ import annotations

import pytest

from drover.jobspec import JobspecError, parse_document


def test_arguments_evaluated_blocks_listed_under_their_type_labels_nested() -> None:
    doc = parse_document(
        """
        datacenter = "east"
        name       = "n-${1 + 1}"
        addr       = node.unique.name
        client {
          meta { rack = "r7" }
          reserved { cpu = 500  memory = 256 }
          servers = ["a:4647", "b:4647"]
        }
        plugin "raw_exec" { config { enabled = true } }
        plugin "mock" {}
        a "b" "c" { d = 1.5 }
        """,
        filename="agent.hcl",
    )
    assert doc == {
        "datacenter": "east",
        "name": "n-2",
        "addr": "${node.unique.name}",
        "client": [{"meta": [{"rack": "r7"}], "reserved": [{"cpu": 500, "memory": 256}],
                    "servers": ["a:4647", "b:4647"]}],
        "plugin": [{"raw_exec": {"config": [{"enabled": True}]}}, {"mock": {}}],
        "a": [{"b": {"c": {"d": 1.5}}}],
    }  # fmt: skip


def test_every_problem_is_reported_with_its_file_line_and_field() -> None:
    with pytest.raises(JobspecError) as e:
        parse_document(
            'a = var.x\nclient {\n  b = upper("x")\n}\nplugin "p" {\n  c = 1 / 0\n}\nd = 1\nd {}\n',
            filename="agent.hcl",
        )
    assert [p.split(":")[:3] for p in e.value.problems] == [
        ["agent.hcl", "1", " a"],
        ["agent.hcl", "3", " client.b"],
        ["agent.hcl", "6", " plugin[p].c"],
        ["agent.hcl", "9", " d"],
    ]


def test_a_syntax_error_is_a_jobspec_error_naming_the_line() -> None:
    with pytest.raises(JobspecError, match=r"^agent.hcl:3: syntax: "):
        parse_document("a = 1\nclient {\n  b = \n", filename="agent.hcl")
