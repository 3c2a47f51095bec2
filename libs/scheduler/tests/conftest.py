"""Builders shared by the scheduler tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from drover.model import (
    Allocation,
    DriverInfo,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    RescheduleEvent,
    RescheduleTracker,
    Resources,
    Task,
    TaskGroup,
)
from drover.model.canonicalize import canonicalize
from drover.scheduler import harness as harness_module
from drover.scheduler.harness import Harness
from drover.scheduler.plan import SchedulerResult


def make_node(
    node_id: str,
    *,
    dc: str = "dc1",
    cpu: int = 4000,
    mem: int = 8192,
    disk: int = 100_000,
    meta: dict[str, str] | None = None,
    node_class: str = "",
    **kw: Any,
) -> Node:
    return Node(
        id=node_id,
        name=node_id,
        datacenter=dc,
        node_class=node_class,
        meta=meta or {},
        attributes={"kernel.name": "linux", "unique.hostname": node_id},
        drivers={"mock": DriverInfo()},
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=cpu),
            memory=NodeMemoryResources(memory_mb=mem),
            disk=NodeDiskResources(disk_mb=disk),
        ),
        **kw,
    )


def make_job(
    job_id: str = "web",
    *,
    count: int = 10,
    job_type: str = "service",
    cpu: int = 500,
    mem: int = 256,
    group: str = "g",
    datacenters: list[str] | None = None,
    **tg_kw: Any,
) -> Job:
    job = Job(
        id=job_id,
        type=job_type,
        datacenters=datacenters or ["dc1", "dc2", "dc3"],
        task_groups=[
            TaskGroup(
                name=group,
                count=count,
                tasks=[Task(name="t", driver="mock", resources=Resources(cpu=cpu, memory_mb=mem))],
                **tg_kw,
            )
        ],
    )
    return canonicalize(job)


def tracker(*events: tuple[int, int]) -> RescheduleTracker:
    """Events as (reschedule_time, delay)."""
    return RescheduleTracker(
        events=[
            RescheduleEvent(reschedule_time=t, prev_alloc_id=f"old-{i}", prev_node_id=f"n{i}", delay=d)
            for i, (t, d) in enumerate(events)
        ]
    )


_counter = iter(range(1, 1_000_000))


def make_eval(job: Job, trigger: str = "job-register", **kw: Any) -> Evaluation:
    return Evaluation(
        id=f"eval-{next(_counter):06d}",
        job_id=job.id,
        namespace=job.namespace,
        type=job.type,
        priority=job.priority,
        triggered_by=trigger,
        **kw,
    )


@pytest.fixture
def harness() -> Harness:
    return Harness()


def assert_built_valid(alloc: Allocation) -> None:
    """The scheduler builds placements unvalidated (`copy_with`): each must be exactly what
    validating its own JSON gives, member for member and type for type (repr shows both, e.g.
    a NumPy float where a float belongs)."""
    again = Allocation.model_validate_json(alloc.model_dump_json())
    assert repr(again) == repr(alloc)


@pytest.fixture(autouse=True)
def placements_are_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test that schedules through the Harness (fresh placements, canaries, deployment
    placements, reschedules with their trackers) checks every placement it makes."""
    real = harness_module.schedule

    def checked(*args: Any, **kwargs: Any) -> SchedulerResult:
        res = real(*args, **kwargs)
        for a in res.plan.placements():
            assert_built_valid(a)
        return res

    monkeypatch.setattr(harness_module, "schedule", checked)


Register = Callable[..., Any]
