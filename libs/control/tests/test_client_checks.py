"""Nomad service checks as the client runs them: IDs, modes, targets, thresholds, script
checks' results and check_restart."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from drover.control.client.checks import (
    OUTPUT_DEADLINE,
    SCRIPT_OUTPUT_LIMIT,
    STATUS_FAILURE,
    STATUS_PENDING,
    STATUS_SUCCESS,
    STATUS_WARNING,
    CheckSpec,
    RestartWatch,
    Threshold,
    alloc_checks,
    check_id,
    check_mode,
    http_status_ok,
    script_command,
    script_result,
)
from drover.model import Allocation
from drover.model.allocated import AllocatedResources, AllocatedSharedResources
from drover.model.durations import SECOND
from drover.model.job import TaskGroup
from drover.model.network import AllocatedPortMapping, NetworkResource
from drover.model.services import Service, ServiceCheck


def _nomad_id(alloc: str, group: str, c: ServiceCheck) -> str:
    """NomadCheckID written out: the strings, then each duration as 8 little-endian bytes."""
    head = "".join((alloc, group, c.task_name, c.name, c.type, c.port_label, c.on_update, c.address_mode))
    tail = "".join((c.protocol, c.path, c.method, str(c.tls_skip_verify).lower()))
    data = head.encode() + c.interval.to_bytes(8, "little") + c.timeout.to_bytes(8, "little") + tail.encode()
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "check",
    [
        {"Name": "alive", "Type": "http", "Path": "/health", "Interval": 10 * SECOND, "Timeout": 2 * SECOND},
        {
            "Name": "tcp",
            "Type": "tcp",
            "PortLabel": "admin",
            "Interval": SECOND,
            "Timeout": SECOND,
            "OnUpdate": "ignore",
        },
        {"Name": "x", "Type": "http", "Method": "POST", "TLSSkipVerify": True, "Protocol": "https"},
    ],
)
def test_check_ids_are_nomads(check: dict[str, Any]) -> None:
    c = ServiceCheck.model_validate(check)
    assert check_id("a1", "web", c) == _nomad_id("a1", "web", c)
    assert check_id("a2", "web", c) != check_id("a1", "web", c)


def test_check_mode() -> None:
    assert check_mode(ServiceCheck(on_update="ignore")) == "readiness"
    assert check_mode(ServiceCheck(on_update="require_healthy")) == "healthiness"
    assert check_mode(ServiceCheck()) == "healthiness"


RES = AllocatedResources(
    shared=AllocatedSharedResources(
        networks=[NetworkResource(ip="127.0.0.1")],
        ports=[AllocatedPortMapping(label="http", value=25000, host_ip="127.0.0.1"),
               AllocatedPortMapping(label="admin", value=25001, host_ip="127.0.0.1")],
    )
)  # fmt: skip


def test_alloc_checks_targets_and_urls() -> None:
    tg = TaskGroup.model_validate({
        "Name": "web",
        "Services": [{"Name": "web", "PortLabel": "http", "Provider": "nomad", "Checks": [
            {"Name": "alive", "Type": "http", "Path": "health"},
            {"Name": "admin", "Type": "tcp", "PortLabel": "admin"},
        ]}],
        "Tasks": [{"Name": "srv", "Services": [{"Name": "api", "PortLabel": "http", "Provider": "nomad",
                                                 "Checks": [{"Name": "api", "Type": "http", "Path": "/v1"}]}]}],
    })  # fmt: skip
    alloc = Allocation(id="a1", name="shop.web[0]", task_group="web", allocated_resources=RES)
    specs = alloc_checks(alloc, tg)
    assert [(s.check.name, s.task, s.target(RES)) for s in specs] == [
        ("alive", "", ("127.0.0.1", 25000)),
        ("admin", "", ("127.0.0.1", 25001)),
        ("api", "srv", ("127.0.0.1", 25000)),
    ]
    assert specs[0].url("127.0.0.1", 25000) == "http://127.0.0.1:25000/health"
    stub = specs[2].stub(alloc, 7).to_api()
    assert stub == {"ID": specs[2].id, "Mode": "healthiness", "Status": "pending", "Output": "nomad: waiting to run",
                    "Timestamp": 7, "Group": "shop.web[0]", "Task": "srv", "Service": "api", "Check": "api"}  # fmt: skip
    # A consul service's checks are not ours.
    tg.services[0].provider = "consul"
    assert [s.check.name for s in alloc_checks(alloc, tg)] == ["api"]


@pytest.mark.parametrize(
    ("code", "ok"), [(200, True), (204, True), (302, True), (399, True), (400, False), (503, False)]
)
def test_http_status(code: int, ok: bool) -> None:
    assert http_status_ok(code) is ok


@pytest.mark.parametrize(
    ("before_passing", "before_critical", "runs", "want"),
    [
        (0, 0, [True, False, True], [STATUS_SUCCESS, STATUS_FAILURE, STATUS_SUCCESS]),
        (2, 0, [True, True, False, True, True], [STATUS_PENDING, STATUS_SUCCESS, STATUS_FAILURE, STATUS_FAILURE,
                                                   STATUS_SUCCESS]),
        (0, 3, [True, False, False, False, True], [STATUS_SUCCESS, STATUS_SUCCESS, STATUS_SUCCESS, STATUS_FAILURE,
                                                    STATUS_SUCCESS]),
        (0, 2, [False, True, False, False], [STATUS_PENDING, STATUS_SUCCESS, STATUS_SUCCESS, STATUS_FAILURE]),
    ],
)  # fmt: skip
def test_thresholds(before_passing: int, before_critical: int, runs: list[bool], want: list[str]) -> None:
    t = Threshold(before_passing, before_critical)
    assert [t.observe(ok) for ok in runs] == want


def test_check_restart_counts_failures_after_grace() -> None:
    w = RestartWatch(limit=2, grace=10 * SECOND)
    started = 100 * SECOND
    # Within the grace period failures do not count.
    assert not w.observe(STATUS_FAILURE, started + 5 * SECOND, started)
    assert not w.observe(STATUS_FAILURE, started + 11 * SECOND, started)
    assert not w.observe(STATUS_SUCCESS, started + 12 * SECOND, started)  # a success starts over
    assert not w.observe(STATUS_FAILURE, started + 13 * SECOND, started)
    assert w.observe(STATUS_FAILURE, started + 14 * SECOND, started)
    assert not w.observe(STATUS_FAILURE, started + 15 * SECOND, started)  # counted again from 0
    assert not RestartWatch(limit=0, grace=0).observe(STATUS_FAILURE, started, 0)


def test_script_checks_run_in_their_task() -> None:
    tg = TaskGroup.model_validate({
        "Name": "web",
        "Services": [
            {"Name": "web", "Provider": "nomad", "TaskName": "srv",
             "Checks": [{"Name": "by-service", "Type": "script", "Command": "true"}]},
            {"Name": "db", "Provider": "nomad",
             "Checks": [{"Name": "by-check", "Type": "script", "Command": "true", "TaskName": "side"}]},
        ],
        "Tasks": [{"Name": "srv", "Services": [{"Name": "api", "Provider": "nomad",
                                                 "Checks": [{"Name": "own", "Type": "script", "Command": "x"}]}]},
                  {"Name": "side"}],
    })  # fmt: skip
    specs = alloc_checks(Allocation(id="a1", task_group="web"), tg)
    assert [(s.check.name, s.script, s.check_task, s.task) for s in specs] == [
        ("by-service", True, "srv", ""),
        ("by-check", True, "side", ""),
        ("own", True, "srv", "srv"),
    ]


def test_script_commands_take_the_task_environment_unsplit() -> None:
    check = ServiceCheck(
        type="script", command="${NOMAD_TASK_DIR}/check me", args=["-p", "${PORT}", "${NOPE}"]
    )
    env = {"NOMAD_TASK_DIR": "/t/local", "PORT": "80"}

    def replace(text: str) -> str:
        for k, v in env.items():
            text = text.replace("${" + k + "}", v)
        return text

    assert script_command(check, replace) == ["/t/local/check me", "-p", "80", "${NOPE}"]


@pytest.mark.parametrize(
    ("code", "error", "status", "output"),
    [
        (0, "", STATUS_SUCCESS, "out"),
        (1, "", STATUS_WARNING, "out"),
        (2, "", STATUS_FAILURE, "out"),
        (127, "", STATUS_FAILURE, "out"),
        (-9, "", STATUS_FAILURE, "out"),
        (0, OUTPUT_DEADLINE, STATUS_FAILURE, OUTPUT_DEADLINE),
        (0, "[Errno 2] No such file or directory: 'nope'", STATUS_FAILURE,
         "[Errno 2] No such file or directory: 'nope'"),
    ],
)  # fmt: skip
def test_script_results_by_exit_code(code: int, error: str, status: str, output: str) -> None:
    assert script_result(code, b"out", error) == (status, output)


def test_script_output_keeps_its_last_bytes() -> None:
    long = b"a" * SCRIPT_OUTPUT_LIMIT + b"tail\xff"
    status, output = script_result(2, long)
    assert status == STATUS_FAILURE
    assert len(output.encode()) == SCRIPT_OUTPUT_LIMIT + 2  # the invalid byte replaced
    assert output.endswith("tail\ufffd") and output.startswith("a")


@pytest.mark.parametrize(
    ("on_update", "status", "passing"),
    [
        ("require_healthy", STATUS_SUCCESS, True),
        ("require_healthy", STATUS_WARNING, False),
        ("require_healthy", STATUS_PENDING, False),
        ("ignore_warnings", STATUS_WARNING, True),
        ("ignore_warnings", STATUS_FAILURE, False),
    ],
)
def test_warnings_pass_only_when_ignored(on_update: str, status: str, passing: bool) -> None:
    check = ServiceCheck(type="script", command="x", on_update=on_update)
    assert CheckSpec("id", check, Service(name="s"), "t").passing(status) is passing


def test_check_restart_counts_warnings_unless_ignored() -> None:
    strict, lenient = RestartWatch(limit=2, grace=0), RestartWatch(limit=2, grace=0, ignore_warnings=True)
    assert not strict.observe(STATUS_WARNING, SECOND, 0)
    assert strict.observe(STATUS_WARNING, 2 * SECOND, 0)
    assert not lenient.observe(STATUS_FAILURE, SECOND, 0)
    assert not lenient.observe(STATUS_WARNING, 2 * SECOND, 0)  # a warning starts over
    assert not lenient.observe(STATUS_FAILURE, 3 * SECOND, 0)
    assert lenient.observe(STATUS_FAILURE, 4 * SECOND, 0)
