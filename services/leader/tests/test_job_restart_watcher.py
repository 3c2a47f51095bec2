"""The job restart watcher's passes, without NATS: which restarts it looks at; ended ones it leaves
to the garbage collector."""

from __future__ import annotations

from drover.leader.jobrestarts import JobRestartWatcher
from drover.model import Allocation, Job, Task, TaskGroup
from drover.model.durations import SECOND as S
from drover.model.events import JobRestartSignaled, PlanApplied
from drover.model.jobrestart import JobRestart
from drover.model.state import InMemoryState

NOW = 1_700_000_000 * S


def _state() -> InMemoryState:
    state = InMemoryState()
    state.upsert_job(Job(id="web", task_groups=[TaskGroup(name="g", tasks=[Task(name="t")])]))
    state.upsert_alloc(
        Allocation(id="a0", job_id="web", task_group="g", client_status="running", name="web.g[0]")
    )
    return state


def test_ended_restarts_are_left_to_the_garbage_collector() -> None:
    state = _state()
    state.upsert_job_restart(JobRestart(id="old", job_id="web", status="complete", updated_at=NOW - 3600 * S))
    state.upsert_job_restart(JobRestart(id="new", job_id="web", status="cancelled", updated_at=NOW - 60 * S))
    assert JobRestartWatcher(state).step(NOW) == []


def test_after_the_first_pass_it_looks_only_at_restarts_whose_job_changed() -> None:
    state = _state()
    state.upsert_job_restart(JobRestart(id="r1", job_id="web", create_index=10))
    watcher = JobRestartWatcher(state)
    (signal,) = watcher.step(NOW)  # the first pass looks at every restart
    assert isinstance(signal, JobRestartSignaled) and signal.alloc_ids() == ["a0"]
    assert watcher.step(NOW + 1) == []  # nothing changed: not looked at
    watcher.on_event(20, PlanApplied(eval_id="e", job_id="web"), {})
    assert len(watcher.step(NOW + 2)) == 1  # looked at again (the replica has no signal yet)
