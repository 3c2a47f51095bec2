"""Driver configs checked at register: unknown keys and bad values, every problem listed."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Job, Task, TaskGroup
from drover.model.canonicalize import canonicalize
from drover.model.drivers import config_problems
from drover.model.validation import validate_job


@pytest.mark.parametrize(
    ("driver", "config", "problems"),
    [
        ("mock", {"run_for": "10s", "exit_code": 1, "kill_after": "1s"}, []),
        ("mock", {}, []),
        ("mock", {"run_for": "soon"}, ['mock config "run_for"']),
        ("mock", {"exit_code": "1"}, ['mock config "exit_code": must be an integer']),
        ("mock", {"runfor": "1s", "bogus": 1}, ['unknown key "bogus"', 'unknown key "runfor"']),
        ("raw_exec", {"command": "/bin/sleep", "args": ["1"]}, []),
        ("raw_exec", {}, ['"command" is required']),
        ("raw_exec", {"command": " "}, ["must not be empty"]),
        (
            "raw_exec",
            {"command": "x", "args": "1 2", "image": "redis"},
            ['"args": must be a list', 'unknown key "image"'],
        ),
        ("docker", {"image": "redis", "anything": True}, []),  # not ours to check
    ],
)
def test_config_problems(driver: str, config: dict[str, Any], problems: list[str]) -> None:
    got = config_problems(driver, config)
    assert len(got) == len(problems), got
    for want, have in zip(problems, got, strict=True):
        assert want in have


def test_register_lists_every_driver_config_problem() -> None:
    job = canonicalize(
        Job(
            id="j",
            task_groups=[
                TaskGroup(
                    name="g",
                    tasks=[
                        Task(name="a", driver="raw_exec", config={"cmd": "ls"}),
                        Task(name="b", driver="mock", config={"run_for": "x"}),
                    ],
                )
            ],
        )
    )
    problems = "\n".join(validate_job(job))
    assert 'unknown key "cmd"' in problems and '"command" is required' in problems and '"run_for"' in problems
