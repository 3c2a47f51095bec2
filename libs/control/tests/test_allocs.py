"""Commands on allocs: client status reports (with alloc-failure and reconnect evals), the
operator's in-place restart and stop."""

from __future__ import annotations

import pytest

from drover.control.commands import allocs
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Allocation, TaskState
from drover.model.events import (
    AllocClientUpdate,
    AllocRestartRequested,
    AllocsClientUpdated,
    AllocsTransitioned,
)

from .conftest import NOW, Cluster, alloc, job, node


def _update(alloc_id: str, status: str) -> AllocClientUpdate:
    return AllocClientUpdate(id=alloc_id, client_status=status)


@pytest.mark.parametrize(
    ("current", "reported", "trigger"),
    [
        ({"client_status": "running"}, "failed", "alloc-failure"),
        ({"client_status": "failed"}, "failed", None),  # failed already: counted once
        ({"client_status": "running", "desired_status": "stop"}, "failed", None),  # the servers stopped it
        ({"client_status": "unknown"}, "running", "reconnect"),
        # Whatever an unknown alloc reports, it is back: the reconnect eval decides (Nomad's).
        ({"client_status": "unknown"}, "failed", "reconnect"),
        ({"client_status": "unknown"}, "complete", "reconnect"),
        ({"client_status": "unknown", "desired_status": "stop"}, "complete", "reconnect"),
        ({"client_status": "pending"}, "running", None),
        ({"client_status": "running"}, "complete", None),
    ],
)
def test_client_updates_and_the_evals_they_call_for(
    cluster: Cluster, current: dict[str, str], reported: str, trigger: str | None
) -> None:
    web = job()
    cluster.add(web, alloc("a1", web, **current))
    change = allocs.client_update(cluster.reads, "n1", [_update("a1", reported)], NOW)
    event = change.events[0].event
    assert isinstance(event, AllocsClientUpdated) and event.node_id == "n1"
    assert [e.triggered_by for e in change.evals] == ([trigger] if trigger else [])


def test_a_failure_beats_a_reconnect_and_a_stopped_job_is_not_evaluated(cluster: Cluster) -> None:
    web, gone = job("web"), job("gone", stop=True)
    cluster.add(web, gone, alloc("a1", web, client_status="unknown"), alloc("a2", web, client_status="running"),
                alloc("a3", gone, client_status="running"))  # fmt: skip
    updates = [_update("a2", "failed"), _update("a1", "running"), _update("a3", "failed")]
    change = allocs.client_update(cluster.reads, "n1", updates, NOW)
    assert [(e.job_id, e.triggered_by) for e in change.evals] == [("web", "alloc-failure")]


def test_client_updates_refused(cluster: Cluster) -> None:
    web = job()
    cluster.add(web, alloc("a1", web))
    with pytest.raises(Invalid, match="unknown ClientStatus: dancing"):
        allocs.client_update(cluster.reads, "n1", [_update("a1", "dancing")], NOW)
    with pytest.raises(NotFound, match="unknown allocations: x, y"):
        allocs.client_update(
            cluster.reads,
            "n1",
            [_update("x", "running"), _update("a1", "running"), _update("y", "running")],
            NOW,
        )


@pytest.mark.parametrize("status", ["disconnected", "down"])
def test_a_client_reports_only_once_its_node_has_heartbeaten(cluster: Cluster, status: str) -> None:
    """Nomad's UpdateAlloc refuses a node that is down or disconnected: an unknown alloc's report
    that beat its node's heartbeat would show a running alloc on a disconnected node."""
    web = job()
    cluster.add(node("n1", status=status), node("n2"), web,
                alloc("a1", web, client_status="unknown"), alloc("a2", web, "n2"))  # fmt: skip
    with pytest.raises(Conflict, match=f"^node n1 is not allowed to update allocs while in status {status}$"):
        allocs.client_update(cluster.reads, "n1", [_update("a2", "running"), _update("a1", "running")], NOW)
    cluster.add(node("n1"))  # its heartbeat got through: ready again
    change = allocs.client_update(cluster.reads, "n1", [_update("a1", "running")], NOW)
    assert [e.triggered_by for e in change.evals] == ["reconnect"]


def _running(**kw: object) -> Allocation:
    return alloc("a1", job(), client_status="running", task_states={"t": TaskState(state="running")}, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "task", "all_tasks", "refusal"),
    [
        (_running(), "t", True, "Task name cannot be set when restarting all tasks"),
        (None, "", False, "alloc not found"),
        (_running(desired_status="stop"), "", False, "Alloc a1 is terminal (stop/running)"),
        (_running(), "nope", False, 'Unknown task "nope" (alloc a1 has: t)'),
        (
            alloc("a1", job(), task_states={"t": TaskState(state="pending")}),
            "t",
            False,
            'Task "t" not running',
        ),
        (alloc("a1", job(), task_states={"t": TaskState(state="dead")}), "", False, "No task is running"),
    ],
)
def test_restart_refused(
    cluster: Cluster, given: Allocation | None, task: str, all_tasks: bool, refusal: str
) -> None:
    cluster.add(job(), *([given] if given else []))
    with pytest.raises((Invalid, NotFound)) as e:
        allocs.restart_alloc(cluster.reads, "a1", task, all_tasks, NOW)
    assert e.value.message == refusal
    assert isinstance(e.value, NotFound) == (given is None)


@pytest.mark.parametrize(("task", "all_tasks"), [("t", False), ("", False), ("", True)])
def test_restart_records_one_request(cluster: Cluster, task: str, all_tasks: bool) -> None:
    cluster.add(job(), _running())
    change = allocs.restart_alloc(cluster.reads, "a1", task, all_tasks, NOW)
    (event,) = (e.event for e in change.events)
    assert isinstance(event, AllocRestartRequested) and event.alloc_id == "a1"
    assert (event.request.task_name, event.request.all_tasks, event.request.time) == (task, all_tasks, NOW)
    assert event.request.id == change.request_id and change.request_id
    assert allocs.restart_alloc(cluster.reads, "a1", task, all_tasks, NOW).request_id != change.request_id


@pytest.mark.parametrize("no_shutdown_delay", [False, True])
def test_stop_marks_the_alloc_to_migrate_with_an_alloc_stop_eval(
    cluster: Cluster, no_shutdown_delay: bool
) -> None:
    web = job(priority=70).model_copy(update={"modify_index": 12})
    cluster.add(web, alloc("a1", web, client_status="running"))
    change = allocs.stop(cluster.reads, "a1", no_shutdown_delay, NOW)
    (event,) = (e.event for e in change.events)
    assert isinstance(event, AllocsTransitioned) and event.evals == change.evals
    t = event.transitions["a1"]
    assert (
        t.migrate is True and t.no_shutdown_delay is no_shutdown_delay and list(event.transitions) == ["a1"]
    )
    (eval_,) = change.evals
    assert (eval_.triggered_by, eval_.job_id, eval_.status, eval_.priority, eval_.type, eval_.job_modify_index) == (
        "alloc-stop", "web", "pending", 70, "service", 12,
    )  # fmt: skip


def test_stop_of_an_unknown_alloc_or_one_whose_job_is_gone(cluster: Cluster) -> None:
    with pytest.raises(NotFound, match="alloc not found"):
        allocs.stop(cluster.reads, "nope", False, NOW)
    cluster.add(alloc("a1", job("gone")))
    with pytest.raises(NotFound, match="job 'gone'"):
        allocs.stop(cluster.reads, "a1", False, NOW)
