"""What a job's JSON holds that the model does not keep, named for the responses' Warnings."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model.unkept import format_warnings, unkept_in_job

GROUP: dict[str, Any] = {"Name": "web", "Count": 2, "Tasks": [{"Name": "web", "Driver": "raw_exec"}]}


def _job(**extra: Any) -> dict[str, Any]:
    return {"ID": "web", "TaskGroups": [GROUP], **extra}


def _group(**extra: Any) -> dict[str, Any]:
    return {"ID": "web", "TaskGroups": [{**GROUP, **extra}]}


def _task(**extra: Any) -> dict[str, Any]:
    return {"ID": "web", "TaskGroups": [{**GROUP, "Tasks": [{**GROUP["Tasks"][0], **extra}]}]}


@pytest.mark.parametrize(
    ("job", "want"),
    [
        # Everything kept: nothing to say.
        (_job(), []),
        (_job(Type="batch", Meta={"a": "b"}, Update={"MaxParallel": 1}), []),
        (_task(RestartPolicy={"Attempts": 1, "Mode": "delay"}, KillTimeout=5), []),
        # Every block of Nomad's api Job, TaskGroup and Task is kept (drover.model.jobwarnings
        # names those Drover does not carry out).
        (
            _group(
                Networks=[{"ReservedPorts": [{"Label": "admin", "Value": 9900}]}],
                Services=[{"Name": "web", "PortLabel": "http"}],
                Scaling={"Min": 1, "Max": 5},
            ),
            [],
        ),
        (_task(Templates=[{"EmbeddedTmpl": "hello", "DestPath": "local/hello.txt"}]), []),
        (_task(Resources={"CPU": 100, "Networks": [{"MBits": 10}]}), []),
        (_job(Multiregion={"Regions": [{"Name": "east"}]}), []),
        # Inside a kept block: a member it does not keep.
        (
            _group(Networks=[{"DynamicPorts": [{"Label": "http", "Colour": "red"}]}]),
            ['group "web": Networks[0].DynamicPorts[0].Colour is not supported by Drover and was dropped'],
        ),
        (
            _task(Services=[{"Name": "web", "Checks": [{"Type": "http", "Shade": 3}]}]),
            [
                'group "web": task "web": Services[0].Checks[0].Shade is not supported by Drover and was dropped'
            ],
        ),
        # A key that is no Nomad field at all.
        (_job(Colour="blue"), ["Colour is not supported by Drover and was dropped"]),
        # Unset blocks and zero values, as `nomad job run -output` writes them: nothing.
        (_group(Networks=None, Services=[], Scaling={}, ShutdownDelay=0, Consul=None), []),
        (_task(KillSignal="", Vault=None, Templates=[], Lifecycle=None), []),
        # Keys read by their snake_case names are kept too.
        ({"id": "web", "task_groups": [{"name": "web", "count": 1}]}, []),
        # Not a job at all: nothing (the model's own validation says what is wrong).
        (None, []),
        ("web", []),
    ],
)
def test_unkept_members_are_named(job: Any, want: list[str]) -> None:
    assert unkept_in_job(job) == want


@pytest.mark.parametrize(
    ("warnings", "want"),
    [
        ([], ""),
        (["one"], "1 warning:\n\n* one"),
        (["one", " two "], "2 warnings:\n\n* one\n* two"),
    ],
)
def test_warnings_in_nomads_form(warnings: list[str], want: str) -> None:
    assert format_warnings(warnings) == want
