"""The reducer's part for job restarts: a batch is recorded with its signal and applied once;
a terminal restart stays as it ended; a deployment that starts cancels its job's restarts."""

from __future__ import annotations

from drover.model import Allocation, Deployment
from drover.model.alloc import AllocRestartRequest
from drover.model.events import (
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    PlanApplied,
)
from drover.model.jobrestart import JobRestart, request_id
from drover.model.reducer import apply
from drover.model.state import InMemoryState


def _state() -> InMemoryState:
    state = InMemoryState()
    for i in range(3):
        state.upsert_alloc(Allocation(id=f"a{i}", job_id="web", node_id="n1", client_status="running"))
    apply(state, 10, JobRestartStarted(restart=JobRestart(id="r1", job_id="web", batch_size=2)))
    return state


def _signal(batch: int, *ids: str, migrate: tuple[str, ...] = ()) -> JobRestartSignaled:
    requests = {i: AllocRestartRequest(id=request_id("r1", i), time=5) for i in ids}
    return JobRestartSignaled(restart_id="r1", job_id="web", batch_number=batch, requests=requests,
                              migrate=list(migrate), at=5)  # fmt: skip


def test_a_batch_is_recorded_with_its_signal_and_applied_once() -> None:
    state = _state()
    assert state.job_restarts["r1"].create_index == 10
    apply(state, 11, _signal(1, "a0", "a1"))
    apply(state, 12, _signal(1, "a0", "a1"))  # written again: the same batch
    apply(state, 13, _signal(3, "a2"))  # not the next batch
    r = state.job_restarts["r1"]
    assert (r.batch_number, r.batch, r.restarted_allocs) == (1, ["a0", "a1"], ["a0", "a1"])
    assert r.in_flight() and r.modify_index == 11
    assert state.allocs["a0"].restart_request == AllocRestartRequest(id=request_id("r1", "a0"), time=5)
    assert state.allocs["a2"].restart_request is None
    apply(state, 14, JobRestartUpdated(restart_id="r1", job_id="web", batch_done_at=9, at=9))
    assert not state.job_restarts["r1"].in_flight()
    apply(state, 15, _signal(2, migrate=("a2",)))
    r = state.job_restarts["r1"]
    assert (r.batch_number, r.batch, r.batch_done_at) == (2, ["a2"], 0)
    assert state.allocs["a2"].desired_transition.should_migrate()


def test_request_ids_are_derived_from_the_restart_and_the_alloc() -> None:
    assert request_id("r1", "a0") == request_id("r1", "a0")
    assert len({request_id("r1", "a0"), request_id("r1", "a1"), request_id("r2", "a0")}) == 3


def test_a_terminal_restart_stays_as_it_ended() -> None:
    state = _state()
    apply(
        state,
        11,
        JobRestartUpdated(restart_id="r1", job_id="web", status="cancelled", status_description="x"),
    )
    apply(state, 12, JobRestartUpdated(restart_id="r1", job_id="web", status="running"))
    apply(state, 13, _signal(1, "a0"))
    r = state.job_restarts["r1"]
    assert (r.status, r.status_description, r.batch, r.modify_index) == ("cancelled", "x", [], 11)
    assert state.allocs["a0"].restart_request is None
    apply(state, 14, JobRestartDeleted(restart_id="r1", job_id="web"))
    assert state.job_restarts == {} and state.job_restarts_of("default", "web") == []


def test_a_deployment_that_starts_cancels_the_job_s_running_restarts() -> None:
    state = _state()
    apply(state, 11, JobRestartStarted(restart=JobRestart(id="r0", job_id="web", status="complete")))
    apply(state, 12, JobRestartStarted(restart=JobRestart(id="other", job_id="api")))
    dep = Deployment(id="d1", job_id="web")
    apply(state, 13, PlanApplied(eval_id="e1", job_id="web", deployment=dep, at=7))
    assert state.job_restarts["r1"].status == "cancelled"
    assert state.job_restarts["r1"].status_description == "Cancelled because deployment d1 started"
    assert state.job_restarts["r0"].status == "complete"  # already ended
    assert state.job_restarts["other"].status == "running"  # another job's
    # The same deployment written again (a later plan) is not a deployment starting.
    apply(state, 14, JobRestartStarted(restart=JobRestart(id="r2", job_id="web")))
    apply(state, 15, PlanApplied(eval_id="e2", job_id="web", deployment=dep, at=8))
    assert state.job_restarts["r2"].status == "running"
