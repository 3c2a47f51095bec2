"""What templates read, from the API's answers, and the `env = true` file format."""

from __future__ import annotations

import pytest

from drover.control.client.templatedata import CachedData, parse_env_file


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("A=1\nB=two\n", {"A": "1", "B": "two"}),
        ("# a comment\n\nexport A=1\n", {"A": "1"}),
        ("A=\"quoted value\"\nB='single'\n", {"A": "quoted value", "B": "single"}),
        ('A="line\\nbreak"', {"A": "line\nbreak"}),
        ("A=1 # trailing comment", {"A": "1"}),
        ("A=x=y", {"A": "x=y"}),
        ("no equals sign\n=novalue\n", {}),
        ("A=\n", {"A": ""}),
    ],
)
def test_an_env_template_is_read_as_key_value_lines(text: str, env: dict[str, str]) -> None:
    assert parse_env_file(text) == env


def test_the_api_answers_become_what_the_functions_give() -> None:
    web = {"ID": "_nomad-task-a-g-web-http", "ServiceName": "web", "NodeID": "n1", "Address": "10.0.0.1",
           "Port": 8080, "Datacenter": "dc1", "Tags": ["b", "a"], "JobID": "web", "AllocID": "a", "Namespace": "default"}  # fmt: skip
    values = {
        ("service", "web"): [web],
        ("service", "gone"): None,
        ("services", ""): [
            {"Namespace": "default", "Services": [{"ServiceName": "web", "Tags": ["b", "a"]}]}
        ],
        ("var", "app/config"): {
            "Namespace": "default",
            "Path": "app/config",
            "ModifyIndex": 7,
            "Items": {"db": "x"},
        },
        ("var", "app/other@prod"): {"Namespace": "prod", "Path": "app/other", "Items": {"k": "v"}},
        ("var", "app/none"): None,
        ("varlist", "app/"): [{"Namespace": "default", "Path": "app/config"}],
    }
    data = CachedData(values, "default")
    (entry,) = data.services("web")
    assert (entry.Name, entry.Address, entry.Port, entry.NodeID, entry.Tags) == (
        "web",
        "10.0.0.1",
        8080,
        "n1",
        ["b", "a"],
    )
    assert data.services("gone") == [] and data.services("never-read") == []
    assert [(s.Name, s.Tags) for s in data.service_names()] == [("web", ["a", "b"])]
    var = data.variable("app/config", "default")
    assert var is not None and var.items == {"db": "x"} and var.meta.ModifyIndex == 7
    other = data.variable("app/other", "prod")
    assert other is not None and other.items == {"k": "v"}
    assert data.variable("app/none", "default") is None
    assert [m.Path for m in data.variables("app/", "default")] == ["app/config"]
