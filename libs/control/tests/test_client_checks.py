"""Nomad service checks as the client runs them: IDs, modes, targets, thresholds and
check_restart."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from drover.control.client.checks import (
    STATUS_FAILURE,
    STATUS_PENDING,
    STATUS_SUCCESS,
    RestartWatch,
    Threshold,
    alloc_checks,
    check_id,
    check_mode,
    http_status_ok,
)
from drover.model import Allocation
from drover.model.allocated import AllocatedResources, AllocatedSharedResources
from drover.model.durations import SECOND
from drover.model.job import TaskGroup
from drover.model.network import AllocatedPortMapping, NetworkResource
from drover.model.services import ServiceCheck


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
