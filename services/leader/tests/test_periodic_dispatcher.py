"""The periodic dispatcher's passes, without NATS: what wakes it, and what it remembers of the
launches it passed over."""

from __future__ import annotations

import asyncio

from drover.leader.periodic import PeriodicDispatcher
from drover.model import Allocation, Job, Task, TaskGroup
from drover.model.durations import SECOND as S
from drover.model.events import JobDeregistered, JobRegistered
from drover.model.job import PeriodicConfig
from drover.model.state import InMemoryState

MIN = 60 * S
TICK = 1_800_000_000 * S - 1_800_000_000 * S % MIN  # a minute's start
GROUPS = [TaskGroup(name="g", tasks=[Task(name="t")])]


def _cron(job_id: str = "cron", **periodic: object) -> Job:
    return Job(
        id=job_id,
        type="batch",
        task_groups=GROUPS,
        submit_time=TICK - 5 * MIN,
        periodic=PeriodicConfig(specs=["* * * * *"], **periodic),  # type: ignore[arg-type]
    )


def test_it_wakes_for_periodic_jobs_registered_or_stopped_and_not_for_their_children() -> None:
    async def run() -> None:
        state = InMemoryState()
        state.upsert_job(_cron())
        d = PeriodicDispatcher(state)
        d.step(TICK)  # tracks "cron"
        child = Job(id=f"cron/periodic-{TICK // S}", parent_id="cron", type="batch", task_groups=GROUPS)
        for event, wakes in [
            (JobRegistered(job=child), False),
            (JobRegistered(job=Job(id="web", task_groups=GROUPS)), False),
            (JobRegistered(job=_cron("other")), True),
            (JobRegistered(job=_cron().model_copy(update={"periodic": None})), True),  # tracked
            (JobDeregistered(namespace="default", job_id="cron"), True),
            (JobDeregistered(namespace="default", job_id="web"), False),
        ]:
            d.wake.clear()
            d.on_event(1, event, {})
            assert d.wake.is_set() == wakes, event

    asyncio.run(run())


def test_a_launch_passed_over_is_remembered_and_the_next_one_awaited() -> None:
    state = InMemoryState()
    job = _cron(prohibit_overlap=True)
    child = Job(id=f"cron/periodic-{(TICK - MIN) // S}", parent_id="cron", type="batch", task_groups=GROUPS)
    state.upsert_job(job)
    state.upsert_job(child)
    state.upsert_alloc(Allocation(id="a1", job_id=child.id, task_group="g", client_status="running"))
    d = PeriodicDispatcher(state)
    launches, wake_at = d.step(TICK + 10 * S)
    assert launches == [] and wake_at == TICK + MIN
    assert d.passed == {("default", "cron"): TICK}
    # The child ended: the next launch is on time, the one passed over is not made up for.
    state.upsert_alloc(Allocation(id="a1", job_id=child.id, task_group="g", client_status="complete"))
    assert d.step(TICK + 20 * S)[0] == []
    (launch,) = d.step(TICK + MIN)[0]
    assert launch.at == TICK + MIN
    # A job no longer periodic is forgotten.
    state.upsert_job(job.model_copy(update={"stop": True}))
    assert d.step(TICK + MIN) == ([], None) and d.passed == {} and d.tracked == set()
