"""`drover sim`'s task states (drover.client.simtasks): what the job restart watcher reads of a
simulated alloc, as the agent would report it; and its reports cut small enough to relay.
Pure, no servers."""

from __future__ import annotations

from typing import Any

from drover.client.sim import REPORT_EVENTS, report_chunks
from drover.client.simtasks import SimTasks
from drover.control.leader.jobrestartwatcher import started_after
from drover.model.alloc import TaskState


def _types(tasks: SimTasks, name: str) -> list[str]:
    return [e["Type"] for e in tasks.states[name]["Events"]]


def test_a_request_is_signalled_once_and_the_tasks_start_again() -> None:
    tasks = SimTasks(["a", "b"])
    tasks.start(1)
    assert tasks.signal({"ID": "r1"}, 2) == ["a", "b"]
    assert tasks.signal({"ID": "r1"}, 3) == []  # acted on once
    assert started_after(TaskState.model_validate(tasks.to_api()["a"]), "r1") == 0  # not yet again
    tasks.restarted(["a", "b"], 4)
    assert _types(tasks, "a") == [
        "Received",
        "Started",
        "Restart Signaled",
        "Terminated",
        "Restarting",
        "Started",
    ]
    state = TaskState.model_validate(tasks.to_api()["a"])
    assert state.state == "running" and state.restarts == 1 and state.last_restart == 4
    assert state.events[2].details == {"restart_id": "r1"}
    assert started_after(state, "r1") == 4  # what the job restart watcher waits for
    assert tasks.run == 1  # a finish timer of the run before is void


def test_named_tasks_only_and_a_request_from_before_the_run_is_not_acted_on() -> None:
    tasks = SimTasks(["a", "b"], restart_handled="old")
    tasks.start(1)
    assert tasks.signal({"ID": "old"}, 2) == []
    assert tasks.signal({"ID": "r2", "TaskNames": ["b", "nope"]}, 3) == ["b"]
    assert tasks.signal({"ID": "r3", "TaskName": "a"}, 4) == ["a"]
    signals = {
        t: [e["Details"]["restart_id"] for e in s["Events"] if e["Type"] == "Restart Signaled"]
        for t, s in tasks.states.items()
    }
    assert signals == {"a": ["r3"], "b": ["r2"]}
    # A copy is reported: what changes later does not reach an update already queued.
    before = tasks.to_api()
    tasks.restarted(["b"], 5)
    assert before["b"]["Restarts"] == 0 and tasks.states["b"]["Restarts"] == 1
    assert tasks.states["a"]["Restarts"] == 0


def test_finished_and_killed_tasks_are_dead() -> None:
    tasks = SimTasks(["a"])
    tasks.start(1)
    tasks.finish(2, 3, failed=True)
    assert tasks.states["a"]["State"] == "dead" and tasks.states["a"]["Failed"]
    assert tasks.signal({"ID": "r"}, 3) == []  # nothing runs to restart
    killed = SimTasks(["a"])
    killed.start(1)
    killed.finish(2, None)
    assert _types(killed, "a")[-1] == "Killed" and not killed.states["a"]["Failed"]


def test_status_reports_stay_small_enough_to_relay() -> None:
    def update(i: int, events: int) -> dict[str, Any]:
        return {"ID": str(i), "TaskStates": {"t": {"Events": [{}] * events}}}

    restarted = [update(i, 6) for i in range(1000)]
    chunks = report_chunks(restarted)
    assert [u for c in chunks for u in c] == restarted
    assert all(sum(1 + 6 for _ in c) <= REPORT_EVENTS for c in chunks) and len(chunks) == 4
    started = report_chunks([update(i, 1) for i in range(2500)])
    assert [len(c) for c in started] == [1000, 1000, 500]  # never more allocs than BATCH
