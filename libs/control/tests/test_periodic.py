"""Periodic dispatch without a database: the dispatcher's rules (which launches are due: one at
most after downtime, none twice, ProhibitOverlap; what a launch appends) and the force
command's refusals."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from drover.control.commands.periodic import force
from drover.control.errors import Conflict, Invalid, NotFound
from drover.control.leader import periodic
from drover.control.leader.periodic import child_id, dispatch_step, launch_time
from drover.model import Evaluation, Job
from drover.model.events import EvalsUpserted, JobRegistered
from drover.model.job import PeriodicConfig
from drover.model.periodic import SECOND
from drover.model.reducer import apply

from .conftest import Cluster, alloc, job

# 2026-01-01 10:05:30 UTC: half a minute after a launch of "* * * * *".
NOW = int(datetime(2026, 1, 1, 10, 5, 30, tzinfo=UTC).timestamp()) * SECOND
MIN = 60 * SECOND
TICK = NOW - 30 * SECOND  # 10:05:00
NEXT = TICK + MIN  # 10:06:00


def parent(job_id: str = "cron", spec: str = "* * * * *", submitted: int = NOW - 5 * MIN, **kw: Any) -> Job:
    p = PeriodicConfig(
        specs=[spec], prohibit_overlap=kw.pop("overlap", False), enabled=kw.pop("enabled", True)
    )
    return job(job_id, count=1, type="batch", periodic=p, submit_time=submitted, **kw)


def child(of: Job, at: int) -> Job:
    return periodic.derive_child(of, at, at)


def evaluation(of: Job, status: str) -> Evaluation:
    return Evaluation(id=f"e-{of.id}-{status}", job_id=of.id, namespace=of.namespace, status=status)


def launched(step: periodic.DispatchStep) -> list[tuple[str, int]]:
    return [(c.job.parent_id, c.at) for c in step.launches if c.job is not None]


P = parent()
OVER = parent(overlap=True)


@pytest.mark.parametrize(
    ("objs", "passed", "want_launches", "want_skipped", "wake"),
    [
        # Nothing periodic: nothing to do, nothing to wake for.
        ([job("web")], {}, [], {}, None),
        # Registered after the last launch time: the first launch is the next one.
        ([parent(submitted=NOW - 10 * SECOND)], {}, [], {}, NEXT),
        # A launch time passed since it was registered: launched, once.
        ([P], {}, [("cron", TICK)], {}, NEXT),
        # Launched already (its child is there), or dealt with by this dispatcher.
        ([P, child(P, TICK)], {}, [], {}, NEXT),
        ([P], {("default", "cron"): TICK}, [], {}, NEXT),
        # Three hours down: one launch, the last one missed, not 180.
        ([P, child(P, TICK - 180 * MIN)], {}, [("cron", TICK)], {}, NEXT),
        ([parent(submitted=NOW - 1000 * MIN)], {}, [("cron", TICK)], {}, NEXT),
        # Registered again after the last launch time: its schedule starts from then.
        ([parent(submitted=TICK + SECOND), child(P, TICK - MIN)], {}, [], {}, NEXT),
        # Disabled, or stopped: not launched, not waited for.
        ([parent(enabled=False)], {}, [], {}, None),
        ([parent(stop=True)], {}, [], {}, None),
        # ProhibitOverlap: passed over while a child still runs...
        (
            [OVER, child(OVER, TICK - MIN), alloc("a1", child(OVER, TICK - MIN), client_status="running")],
            {}, [], {("default", "cron"): TICK}, NEXT,
        ),
        (
            [OVER, child(OVER, TICK - MIN), alloc("a1", child(OVER, TICK - MIN), client_status="pending")],
            {}, [], {("default", "cron"): TICK}, NEXT,
        ),
        ([OVER, child(OVER, TICK - MIN), evaluation(child(OVER, TICK - MIN), "blocked")], {}, [], {("default", "cron"): TICK}, NEXT),
        # ...and launched once every child is done: allocs finished or stopped, evals terminal.
        (
            [
                OVER,
                child(OVER, TICK - 2 * MIN),
                alloc("a1", child(OVER, TICK - 2 * MIN), client_status="complete"),
                child(OVER, TICK - MIN),
                alloc("a2", child(OVER, TICK - MIN), client_status="running", desired_status="stop"),
                evaluation(child(OVER, TICK - MIN), "complete"),
            ],
            {}, [("cron", TICK)], {}, NEXT,
        ),
        # Overlap allowed: a running child does not hold the next launch.
        ([P, child(P, TICK - MIN), alloc("a1", child(P, TICK - MIN), client_status="running")], {}, [("cron", TICK)], {}, NEXT),
        # Several jobs: each on its own schedule; the wake is the earliest next launch.
        (
            [P, parent("hourly", "0 * * * *"), parent("soon", "5-59/2 * * * *")],
            {}, [("cron", TICK), ("soon", TICK)], {}, NEXT,
        ),
        ([parent("hourly", "0 * * * *")], {}, [], {}, int(datetime(2026, 1, 1, 11, tzinfo=UTC).timestamp()) * SECOND),
        # A test spec run out: nothing more to wait for.
        ([job("t", type="batch", periodic=PeriodicConfig(spec="1,2", spec_type="test"), submit_time=5 * SECOND)], {}, [], {}, None),
    ],
)  # fmt: skip
def test_dispatch_step(
    cluster: Cluster,
    objs: list[Any],
    passed: dict[tuple[str, str], int],
    want_launches: list[tuple[str, int]],
    want_skipped: dict[tuple[str, str], int],
    wake: int | None,
) -> None:
    for o in objs:
        if isinstance(o, Evaluation):
            cluster.state.upsert_eval(o)
        else:
            cluster.add(o)
    step = dispatch_step(cluster.state, passed, NOW)
    assert launched(step) == want_launches
    assert step.skipped == want_skipped
    assert step.wake_at == wake


def test_a_launch_is_the_child_and_its_eval_in_one_append() -> None:
    change = periodic.launch(P, TICK, NOW)
    registered, evals = change.events
    assert isinstance(registered.event, JobRegistered) and isinstance(evals.event, EvalsUpserted)
    # The child's stream must be new: a launch made already is refused by the log.
    assert registered.expected_version == 0
    c = registered.event.job
    assert c.id == c.name == f"cron/periodic-{TICK // SECOND}" == child_id("cron", TICK)
    assert (c.parent_id, c.periodic, c.version, c.submit_time, c.type) == ("cron", None, 0, NOW, "batch")
    assert c.task_groups == P.task_groups and launch_time(c) == TICK
    (e,) = evals.event.evals
    assert (e.triggered_by, e.job_id, e.status, e.type) == ("periodic-job", c.id, "pending", "batch")
    assert change.eval_ids == [e.id] and change.job == c


def test_launch_times_are_read_only_from_periodic_children() -> None:
    assert launch_time(Job(id="cron/periodic-17", parent_id="cron")) == 17 * SECOND
    assert launch_time(Job(id="cron/periodic-17")) is None  # no parent
    assert launch_time(Job(id="cron/dispatch-17-abcd", parent_id="cron")) is None
    assert launch_time(Job(id="cron/periodic-x", parent_id="cron")) is None


def test_a_launch_applied_is_not_due_again(cluster: Cluster) -> None:
    cluster.add(P)
    step = dispatch_step(cluster.state, {}, NOW)
    for i, item in enumerate(step.launches[0].events):
        apply(cluster.state, 10 + i, item.event)
    again = dispatch_step(cluster.state, {}, NOW + 20 * SECOND)
    assert again.launches == [] and again.wake_at == NEXT
    assert launched(dispatch_step(cluster.state, {}, NEXT)) == [("cron", NEXT)]


def test_force_launches_now_whatever_prohibit_overlap_says(cluster: Cluster) -> None:
    running = child(OVER, TICK)
    cluster.add(OVER, running, alloc("a1", running, client_status="running"))
    change = force(cluster.reads, "default", "cron", NOW + 123)
    assert change.job is not None and change.job.id == f"cron/periodic-{NOW // SECOND}"
    assert change.evals[0].triggered_by == "periodic-job"


@pytest.mark.parametrize(
    ("objs", "error", "needle"),
    [
        ([], NotFound, "job not found"),
        ([job("web")], Invalid, "is not periodic"),
        ([parent("web", enabled=False)], Invalid, "disabled"),
        ([parent("web", stop=True)], Invalid, "stopped"),
    ],
)
def test_force_refuses(cluster: Cluster, objs: list[Job], error: type[Exception], needle: str) -> None:
    cluster.add(*objs)
    with pytest.raises(error, match=needle):
        force(cluster.reads, "default", "web", NOW)


def test_force_twice_in_one_second_is_a_conflict(cluster: Cluster) -> None:
    cluster.add(parent("web"))
    cluster.reads.stream_versions[f"job:default/web/periodic-{NOW // SECOND}"] = 1
    with pytest.raises(Conflict, match="already"):
        force(cluster.reads, "default", "web", NOW + 5)
