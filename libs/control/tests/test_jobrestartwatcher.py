"""The restart watcher's decisions: batches in name order, each alloc signalled once, a batch
done when its tasks started again (or its replacements run), BatchWait between batches, health
gates, errors that pause or fail, and the end."""

from __future__ import annotations

from typing import Any

import pytest

from drover.control.leader.jobrestartwatcher import watch_job_restart
from drover.model import Allocation, TaskEvent, TaskState
from drover.model.durations import SECOND as S
from drover.model.events import JobRestartSignaled, JobRestartUpdated
from drover.model.job import UpdateStrategy
from drover.model.jobrestart import JobRestart, request_id
from drover.model.reducer import apply
from drover.model.state import InMemoryState

from .conftest import NOW, alloc, job

WEB = job("web", count=4)


def _allocs(n: int = 4, **kw: Any) -> list[Allocation]:
    return [
        alloc(f"a{i}", WEB, name=f"web.g[{i}]", client_status="running", create_index=5,
              task_states={"t": TaskState(state="running", started_at=1)}, **kw)
        for i in range(n)
    ]  # fmt: skip


def _restart(**kw: Any) -> JobRestart:
    return JobRestart(**{"id": "r1", "job_id": "web", "batch_size": 2, "create_index": 10, **kw})


def _restarted(a: Allocation, at: int, *, state: str = "running", started: bool = True) -> Allocation:
    """`a` as its agent reports it after acting on the restart's request at `at`."""
    events = [TaskEvent(type="Restart Signaled", time=at, details={"restart_id": request_id("r1", a.id)})]
    if started:
        events += [TaskEvent(type="Terminated", time=at + 1), TaskEvent(type="Started", time=at + 2)]
    return a.model_copy(update={"task_states": {"t": TaskState(state=state, started_at=1, events=events)}})


def _after(r: JobRestart, step: Any) -> JobRestart:
    """`r` with the step's events applied (through the one reducer)."""
    state = InMemoryState()
    state.upsert_job_restart(r)
    for event in step.events:
        apply(state, 20, event)
    return state.job_restarts["r1"]


def test_batches_in_name_order_each_alloc_once_with_the_wait_between_then_complete() -> None:
    allocs = _allocs()
    r0 = _restart(batch_wait=3 * S)
    step = watch_job_restart(r0, WEB, allocs, NOW)
    (signal,) = step.events
    assert isinstance(signal, JobRestartSignaled) and signal.batch_number == 1
    assert list(signal.requests) == ["a0", "a1"] and signal.migrate == [] and step.evals == []
    assert signal.requests["a0"].id == request_id("r1", "a0")
    r = _after(r0, step)
    assert watch_job_restart(r, WEB, allocs, NOW + 1).events == []  # the agents have not acted yet
    allocs[0], allocs[1] = _restarted(allocs[0], NOW), _restarted(allocs[1], NOW)
    done = watch_job_restart(r, WEB, allocs, NOW + 5)
    assert [(type(e), e.batch_done_at) for e in done.events] == [(JobRestartUpdated, NOW + 5)]  # type: ignore[attr-defined]
    assert done.deadline == NOW + 5 + 3 * S
    r = _after(r, done)
    waiting = watch_job_restart(r, WEB, allocs, NOW + 6)
    assert waiting.events == [] and waiting.deadline == NOW + 5 + 3 * S
    step = watch_job_restart(r, WEB, allocs, NOW + 5 + 3 * S)
    assert list(step.events[0].requests) == ["a2", "a3"]  # type: ignore[attr-defined]
    r = _after(r, step)
    allocs[2], allocs[3] = _restarted(allocs[2], NOW), _restarted(allocs[3], NOW)
    r = _after(r, watch_job_restart(r, WEB, allocs, NOW + 9 * S))
    (end,) = watch_job_restart(r, WEB, allocs, NOW + 12 * S).events
    assert isinstance(end, JobRestartUpdated) and end.status == "complete"
    assert end.status_description == "Restarted 4 allocs in 2 batches"


def test_without_a_wait_the_next_batch_goes_with_the_batch_done() -> None:
    allocs = _allocs()
    r = _after(_restart(), watch_job_restart(_restart(), WEB, allocs, NOW))
    allocs[0], allocs[1] = _restarted(allocs[0], NOW), _restarted(allocs[1], NOW)
    step = watch_job_restart(r, WEB, allocs, NOW + 5)
    done, signal = step.events
    assert isinstance(done, JobRestartUpdated) and done.batch_done_at == NOW + 5
    assert isinstance(signal, JobRestartSignaled) and signal.batch_number == 2
    assert list(signal.requests) == ["a2", "a3"]
    r = _after(r, step)
    assert (r.batch_number, r.batch, r.batch_done_at) == (2, ["a2", "a3"], 0)
    allocs[2], allocs[3] = _restarted(allocs[2], NOW), _restarted(allocs[3], NOW)
    done, end = watch_job_restart(r, WEB, allocs, NOW + 9).events
    assert isinstance(end, JobRestartUpdated) and end.status == "complete"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"create_index": 11}, ["a0", "a1", "a2"]),  # created after the restart: restarted already
        ({"desired_status": "stop"}, ["a0", "a1", "a2"]),  # stopped by the servers
        ({"client_status": "pending"}, ["a0", "a1", "a2"]),  # not running yet: later
    ],
)
def test_which_allocs_a_restart_takes(extra: dict[str, Any], expected: list[str]) -> None:
    allocs = [
        *_allocs(3),
        alloc("late", WEB, name="web.g[9]", **{"client_status": "running", "create_index": 5, **extra}),
    ]
    r = _restart(batch_size=10)
    (signal,) = watch_job_restart(r, WEB, allocs, NOW).events
    assert list(signal.requests) == expected  # type: ignore[attr-defined]
    r = _after(r, watch_job_restart(r, WEB, allocs, NOW))
    left = watch_job_restart(r.model_copy(update={"batch_done_at": NOW}), WEB, allocs, NOW + 1).events
    if extra.get("client_status") == "pending":
        assert left == []  # waits for it to run
    else:
        assert left[0].status == "complete"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("on_error", "status"), [("pause", "paused"), ("fail", "failed")])
@pytest.mark.parametrize("client_status", ["failed", "lost"])
def test_an_alloc_that_does_not_run_again_pauses_or_fails_the_restart(
    on_error: str, status: str, client_status: str
) -> None:
    allocs = _allocs()
    r = _after(_restart(on_error=on_error), watch_job_restart(_restart(on_error=on_error), WEB, allocs, NOW))
    allocs[1] = allocs[1].model_copy(update={"client_status": client_status})
    (update,) = watch_job_restart(r, WEB, allocs, NOW + 1).events
    assert isinstance(update, JobRestartUpdated) and update.status == status
    assert update.status_description.endswith(f"alloc a1 (web.g[1]) {client_status} instead of running again")
    assert (
        watch_job_restart(_after(r, watch_job_restart(r, WEB, allocs, NOW + 1)), WEB, allocs, NOW + 2).events
        == []
    )


def test_a_task_not_running_again_keeps_the_batch_in_flight() -> None:
    allocs = _allocs(2)
    r = _after(_restart(), watch_job_restart(_restart(), WEB, allocs, NOW))
    allocs = [_restarted(allocs[0], NOW, started=False), _restarted(allocs[1], NOW, state="pending")]
    assert watch_job_restart(r, WEB, allocs, NOW + 1).events == []


def test_with_health_checks_a_batch_waits_for_min_healthy_time_and_fails_at_the_deadline() -> None:
    update = UpdateStrategy(min_healthy_time=10 * S, healthy_deadline=60 * S, max_parallel=1)
    web = job("web", count=2)
    web.task_groups[0].update = update
    allocs = _allocs(2)
    r0 = _restart(health_check=True)
    r = _after(r0, watch_job_restart(r0, web, allocs, NOW))
    allocs = [_restarted(a, NOW) for a in allocs]
    started = NOW + 2
    wait = watch_job_restart(r, web, allocs, NOW + 5 * S)
    assert wait.events == [] and wait.deadline == started + 10 * S
    assert watch_job_restart(r, web, allocs, started + 10 * S).events[0].batch_done_at  # type: ignore[attr-defined]
    never = [_restarted(a, NOW, started=False) for a in _allocs(2)]
    assert watch_job_restart(r, web, never, NOW + 30 * S).events == []
    (late,) = watch_job_restart(
        r, web, [_restarted(a, NOW + 55 * S) for a in _allocs(2)], NOW + 60 * S
    ).events
    assert late.status == "paused" and "not healthy by its deadline" in late.status_description  # type: ignore[attr-defined]


def test_with_reschedule_allocs_are_replaced_and_the_batch_waits_for_the_replacements() -> None:
    allocs = _allocs(2)
    r0 = _restart(reschedule=True)
    step = watch_job_restart(r0, WEB, allocs, NOW)
    (signal,) = step.events
    assert signal.migrate == ["a0", "a1"] and signal.requests == {}  # type: ignore[attr-defined]
    assert [e.triggered_by for e in step.evals] == ["alloc-stop"]
    r = _after(r0, step)
    stopped = [
        a.model_copy(update={"desired_status": "stop", "next_allocation": f"n{i}"})
        for i, a in enumerate(allocs)
    ]
    new = [alloc(f"n{i}", WEB, client_status="pending", create_index=30) for i in range(2)]
    assert watch_job_restart(r, WEB, [*stopped, *new], NOW + 1).events == []
    running = [a.model_copy(update={"client_status": "running"}) for a in new]
    assert watch_job_restart(r, WEB, [*stopped, *running], NOW + 2).events[0].batch_done_at  # type: ignore[attr-defined]
    failed = [running[0], running[1].model_copy(update={"client_status": "failed"})]
    assert watch_job_restart(r, WEB, [*stopped, *failed], NOW + 2).events[0].status == "paused"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("tasks", "all_tasks", "task_name", "task_names"),
    [([], False, "", []), (["t"], False, "t", []), (["t", "u"], False, "", ["t", "u"]), ([], True, "", [])],
)
def test_the_request_names_the_tasks(
    tasks: list[str], all_tasks: bool, task_name: str, task_names: list[str]
) -> None:
    (signal,) = watch_job_restart(_restart(tasks=tasks, all_tasks=all_tasks), WEB, _allocs(1), NOW).events
    req = signal.requests["a0"]  # type: ignore[attr-defined]
    assert (req.task_name, req.task_names, req.all_tasks, req.time) == (task_name, task_names, all_tasks, NOW)


@pytest.mark.parametrize("status", ["paused", "cancelled", "complete"])
def test_only_a_running_restart_moves(status: str) -> None:
    assert watch_job_restart(_restart(status=status), WEB, _allocs(), NOW).events == []


def test_a_stopped_job_cancels_its_restart() -> None:
    for j in (None, WEB.model_copy(update={"stop": True})):
        (update,) = watch_job_restart(_restart(), j, _allocs(), NOW).events
        assert update.status == "cancelled" and "job was stopped" in update.status_description  # type: ignore[attr-defined]
