"""The collector's loop (drover.gc.collector) on a real PostgreSQL, its replica fed by what it
appends: periodic core evals written every gc_interval and run; a core eval cut short midway
stays pending and the next leader runs it again to the end; a pass goes in appends of at most
gc_chunk objects, spaced to gc_busy_rate while scheduling work waits."""

from __future__ import annotations

import asyncio

from drover.gc.collector import Collector
from drover.model import Allocation, Evaluation, Job
from drover.model.durations import HOUR, SECOND
from drover.model.evaluation import core_eval
from drover.model.events import EvalsCollected, EvalsUpserted, Event, JobRegistered, NewEvent, PlanApplied
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, RecordedEvent

NOW = 1_700_000_000 * SECOND
SETTINGS = Settings(gc_interval=300, gc_chunk=10)


class Leader:
    """A collector on a state replayed from the log, appending to it; `fail_after` appends it
    stops appending (as if killed there)."""

    def __init__(
        self,
        store: EventStore,
        clock: list[int],
        fail_after: int | None = None,
        settings: Settings = SETTINGS,
    ) -> None:
        self.store = store
        self.state: InMemoryState = store.replay()
        self.appends: list[list[Event]] = []
        self.fail_after = fail_after
        self.slept: list[float] = []  # the pauses between chunks, in seconds
        self.collector = Collector(
            self.state, settings, self.append, self.caught_up, clock=lambda: clock[0], sleep=self.sleep
        )

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def append(self, items: list[NewEvent]) -> list[RecordedEvent] | None:
        if self.fail_after is not None and len(self.appends) >= self.fail_after:
            return None
        recorded = self.store.append(items)
        self.appends.append([i.event for i in items])
        for r in recorded:
            apply(self.state, r.position, r.event)
            self.collector.on_event(r.position, r.event, {})
        return recorded

    async def caught_up(self, position: int) -> bool:
        return self.state.index >= position


def _stopped_job(store: EventStore, allocs: int) -> list[str]:
    """A stopped job, old: its eval complete and `allocs` allocs stopped."""
    old = NOW - 10 * HOUR
    store.append([JobRegistered(job=Job(id="web", stop=True, submit_time=old))])
    evaluation = Evaluation(id="e1", job_id="web", status="complete", modify_time=old)
    placed = [
        Allocation(id=f"a{i:03d}", job_id="web", eval_id="e1", node_id="n1", desired_status="stop")
        for i in range(allocs)
    ]
    store.append(
        [EvalsUpserted(evals=[evaluation]), PlanApplied(eval_id="e1", job_id="web", allocs=placed, at=old)]
    )
    return [a.id for a in placed]


def test_periodic_core_evals_are_written_every_interval_and_run(store: EventStore) -> None:
    clock = [NOW]
    _stopped_job(store, 3)
    leader = Leader(store, clock)
    assert asyncio.run(leader.collector.step())
    assert leader.appends == []  # none due before an interval of leading
    clock[0] += 300 * SECOND
    assert asyncio.run(leader.collector.step())
    core = [e for e in leader.state.evals.values() if e.type == "_core"]
    assert sorted(e.job_id for e in core) == [
        "deployment-gc",
        "eval-gc",
        "job-gc",
        "job-restart-gc",
        "node-gc",
    ]
    assert all((e.status, e.triggered_by) == ("complete", "scheduled") for e in core)
    # eval-gc ran first (the order they were written in) and took the evals and allocs; job-gc the job.
    assert leader.state.allocs == {} and ("default", "web") not in leader.state.jobs
    assert "e1" not in leader.state.evals
    clock[0] += 299 * SECOND
    n = len(leader.appends)
    assert asyncio.run(leader.collector.step()) and len(leader.appends) == n  # not due yet
    clock[0] += SECOND
    assert asyncio.run(leader.collector.step()) and len(leader.appends) > n


def test_a_core_eval_cut_short_is_run_again_by_the_next_leader(store: EventStore) -> None:
    clock = [NOW]
    allocs = _stopped_job(store, 35)
    store.append([EvalsUpserted(evals=[core_eval("force-gc", NOW)])])
    first = Leader(store, clock, fail_after=2)
    assert not asyncio.run(first.collector.step())
    # Two appends of at most 10 allocs each went; the core eval is still pending.
    assert [len(a[0].allocs) for a in first.appends] == [10, 10]  # type: ignore[attr-defined]
    (pending,) = [e for e in store.replay().evals.values() if e.type == "_core"]
    assert pending.status == "pending"
    second = Leader(store, clock)  # a new leader, from the log
    assert asyncio.run(second.collector.step())
    state = store.replay()
    assert state.allocs == {} and state.jobs == {} and list(state.evals) == [pending.id]
    assert state.evals[pending.id].status == "complete"
    collected = [a for r in store.iter_all() if isinstance(r.event, EvalsCollected) for a in r.event.allocs]
    assert sorted(collected) == allocs  # each alloc collected once across both leaders
    before = store.projection_dump()
    store.rebuild_projections()
    assert store.projection_dump() == before


def _pending_eval(store: EventStore, eval_id: str, status: str = "pending") -> None:
    store.append([EvalsUpserted(evals=[Evaluation(id=eval_id, job_id="api", status=status)])])


def test_chunks_are_spaced_to_the_busy_rate_while_an_eval_waits_and_not_once_it_is_done(
    store: EventStore,
) -> None:
    clock = [NOW]
    _stopped_job(store, 35)  # 35 allocs + 1 eval in chunks of 10: 4 chunks
    _pending_eval(store, "waiting")
    store.append([EvalsUpserted(evals=[core_eval("force-gc", NOW)])])
    leader = Leader(store, clock, settings=Settings(gc_interval=300, gc_chunk=10, gc_busy_rate=50))
    assert asyncio.run(leader.collector.step())
    assert leader.state.allocs == {}
    # Paced before each chunk but the first: 10 objects at 50 a second.
    assert leader.slept == [0.2, 0.2, 0.2]


def test_an_idle_cluster_is_collected_at_full_speed(store: EventStore) -> None:
    clock = [NOW]
    _stopped_job(store, 35)
    _pending_eval(store, "done", status="complete")
    store.append([EvalsUpserted(evals=[core_eval("force-gc", NOW)])])
    leader = Leader(store, clock, settings=Settings(gc_interval=300, gc_chunk=10, gc_busy_rate=50))
    assert asyncio.run(leader.collector.step())
    assert leader.state.allocs == {} and leader.slept == []


def test_an_eval_done_a_moment_ago_still_paces_and_one_done_a_second_ago_does_not(store: EventStore) -> None:
    clock = [NOW]
    _pending_eval(store, "waiting")
    leader = Leader(store, clock, settings=Settings(gc_interval=300, gc_chunk=10, gc_busy_rate=50))
    done = Evaluation(id="waiting", job_id="api", status="complete")
    leader.collector.on_event(0, EvalsUpserted(evals=[done]), {})
    assert leader.collector.busy()  # its work may come in a burst: still busy for BUSY_LINGER
    clock[0] += SECOND
    assert not leader.collector.busy()
    _pending_eval(store, "next")
    leader.collector.on_event(0, EvalsUpserted(evals=[Evaluation(id="next", job_id="api")]), {})
    assert leader.collector.busy()
