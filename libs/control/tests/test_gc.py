"""The garbage collector's rules (drover.control.leader.gc), as Nomad's core scheduler decides: which
allocs may go, evals with or without their allocs, dead jobs, inactive deployments, down
nodes, ended restarts; forced collection needs no age."""

from __future__ import annotations

from typing import Any

import pytest

from drover.control.leader.gc import (
    Cutoffs,
    Thresholds,
    View,
    alloc_gc_eligible,
    deployment_gc,
    eval_gc,
    job_gc,
    node_gc,
    restart_gc,
)
from drover.model import (
    Allocation,
    Deployment,
    Disconnect,
    Evaluation,
    Job,
    Node,
    PeriodicConfig,
    RescheduleEvent,
    ReschedulePolicy,
    RescheduleTracker,
    Task,
    TaskGroup,
)
from drover.model.durations import HOUR, MINUTE, SECOND
from drover.model.job import ParameterizedJobConfig
from drover.model.jobrestart import JobRestart
from drover.model.state import InMemoryState

NOW = 1_700_000_000 * SECOND
OLD = NOW - 30 * HOUR  # older than every threshold
RECENT = NOW - 10 * SECOND
THRESHOLDS = Thresholds(
    eval=HOUR, batch_eval=24 * HOUR, job=4 * HOUR, deployment=HOUR, node=24 * HOUR, restart=4 * HOUR
)
CUTOFFS = Cutoffs.of(NOW, THRESHOLDS)
FORCED = Cutoffs.of(NOW, None)
LIMITED = ReschedulePolicy(attempts=2, interval=HOUR, delay=30 * SECOND, delay_function="constant")
UNLIMITED = ReschedulePolicy(unlimited=True, delay=30 * SECOND, delay_function="exponential")
DISABLED = ReschedulePolicy()


def job(job_id: str = "web", *, type: str = "service", policy: ReschedulePolicy | None = LIMITED,
        replace_lost: bool = True, **kw: Any) -> Job:  # fmt: skip
    group = TaskGroup(
        name="g",
        tasks=[Task(name="t", driver="mock")],
        reschedule_policy=policy,
        disconnect=Disconnect(replace=replace_lost),
    )
    return Job(id=job_id, type=type, task_groups=[group], submit_time=kw.pop("submit_time", OLD), **kw)


def alloc(alloc_id: str, of: str = "web", **kw: Any) -> Allocation:
    kw.setdefault("modify_time", OLD)
    return Allocation(id=alloc_id, job_id=of, task_group="g", node_id=kw.pop("node_id", "n1"), **kw)


def evaluation(eval_id: str, of: str = "web", **kw: Any) -> Evaluation:
    kw.setdefault("modify_time", OLD)
    kw.setdefault("status", "complete")
    return Evaluation(id=eval_id, job_id=of, **kw)


def state(*objs: Job | Allocation | Evaluation | Node | Deployment | JobRestart) -> InMemoryState:
    st = InMemoryState()
    for o in objs:
        if isinstance(o, Job):
            st.upsert_job(o)
        elif isinstance(o, Allocation):
            st.upsert_alloc(o)
        elif isinstance(o, Evaluation):
            st.upsert_eval(o)
        elif isinstance(o, Node):
            st.upsert_node(o)
        elif isinstance(o, Deployment):
            st.upsert_deployment(o)
        else:
            st.upsert_job_restart(o)
    return st


def rescheduled(at: int) -> RescheduleTracker:
    return RescheduleTracker(events=[RescheduleEvent(reschedule_time=at, prev_alloc_id="x")])


# (what, the alloc's fields, its job's: "running", "stopped", "dead" or None for gone; the
# group's reschedule policy; whether the group replaces lost allocs; may it go)
ALLOC_CASES = [
    ("running on its client", {"client_status": "running"}, "running", LIMITED, True, False),
    ("complete", {"client_status": "complete"}, "running", LIMITED, True, True),
    ("complete, changed recently", {"client_status": "complete", "modify_time": RECENT}, "running", LIMITED, True, False),
    ("desired stop, client not started", {"desired_status": "stop"}, "running", LIMITED, True, True),
    ("desired stop, still running on its client", {"desired_status": "stop", "client_status": "running"}, "running", LIMITED, True, False),
    ("failed, of a job gone", {"client_status": "failed"}, None, LIMITED, True, True),
    ("failed, of a stopped job", {"client_status": "failed"}, "stopped", LIMITED, True, True),
    ("failed, of a dead job", {"client_status": "failed"}, "dead", LIMITED, True, True),
    ("failed, desired stop", {"client_status": "failed", "desired_status": "stop"}, "running", LIMITED, True, True),
    ("failed, rescheduling disabled", {"client_status": "failed"}, "running", DISABLED, True, True),
    ("failed, no policy", {"client_status": "failed"}, "running", None, True, True),
    ("failed, replaced", {"client_status": "failed", "next_allocation": "b"}, "running", LIMITED, True, True),
    ("failed, not yet rescheduled: it may be", {"client_status": "failed"}, "running", LIMITED, True, False),
    ("failed, unlimited rescheduling", {"client_status": "failed"}, "running", UNLIMITED, True, False),
    ("failed, last rescheduled within the interval",
     {"client_status": "failed", "reschedule_tracker": rescheduled(NOW - 30 * MINUTE)}, "running", LIMITED, True, False),
    ("failed, last rescheduled before the interval",
     {"client_status": "failed", "reschedule_tracker": rescheduled(NOW - 2 * HOUR)}, "running", LIMITED, True, True),
    ("lost, its group does not replace lost allocs", {"client_status": "lost"}, "running", LIMITED, False, False),
    ("lost, its group replaces them", {"client_status": "lost"}, "running", LIMITED, True, True),
    ("lost, of a stopped job that would not replace it", {"client_status": "lost"}, "stopped", LIMITED, False, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "job_is", "policy", "replace_lost", "expected"),
    [c[1:] for c in ALLOC_CASES],
    ids=[c[0] for c in ALLOC_CASES],
)
def test_which_allocs_may_go(
    fields: dict[str, Any], job_is: str | None, policy: ReschedulePolicy, replace_lost: bool, expected: bool
) -> None:
    j = None if job_is is None else job(policy=policy, replace_lost=replace_lost, stop=job_is == "stopped")
    a = alloc("a", **fields)
    assert alloc_gc_eligible(a, j, job_is == "dead", NOW, CUTOFFS.eval) is expected


def _ids(found: Any, kind: str) -> list[object]:
    return [key for k, key in found.items if k == kind]


def test_an_eval_goes_with_its_allocs_only_when_all_of_them_may() -> None:
    st = state(
        job(stop=True),
        evaluation("all-done"), alloc("a1", eval_id="all-done", desired_status="stop"),
        alloc("a2", eval_id="all-done", client_status="complete"),
        evaluation("one-runs"), alloc("b1", eval_id="one-runs", desired_status="stop"),
        alloc("b2", eval_id="one-runs", client_status="running"),
        evaluation("recent", modify_time=RECENT), alloc("c1", eval_id="recent", desired_status="stop"),
        evaluation("pending", status="pending"),
        evaluation("failed", status="failed"), evaluation("canceled", status="canceled"),
    )  # fmt: skip
    found = eval_gc(st, CUTOFFS)
    assert _ids(found, "eval") == ["all-done", "failed", "canceled"]
    # The allocs that may go go anyway (b1), each before its eval; an eval too recent keeps
    # its allocs (c1) for now.
    assert sorted(_ids(found, "alloc")) == ["a1", "a2", "b1"]
    order = [key for _, key in found.items]
    assert order.index("a1") < order.index("all-done") and order.index("a2") < order.index("all-done")


def test_a_batch_job_still_running_keeps_its_current_allocs() -> None:
    """Its scheduler would run them again: only terminal allocs of an older version go, and an
    eval only with all of its allocs."""
    batch = job("b", type="batch", job_modify_index=50)
    st = state(
        batch,
        evaluation("v0", of="b", type="batch"),
        alloc("old", of="b", eval_id="v0", client_status="complete", create_index=10),
        evaluation("v1", of="b", type="batch"),
        alloc("current", of="b", eval_id="v1", client_status="complete", create_index=60),
        alloc("runs", of="b", eval_id="v1", client_status="running", create_index=61),
    )
    found = eval_gc(st, Cutoffs.of(NOW, THRESHOLDS))
    assert _ids(found, "alloc") == ["old"] and _ids(found, "eval") == ["v0"]
    # Once the batch job is stopped (and dead) or gone, all of it may go.
    st.upsert_alloc(alloc("runs", of="b", eval_id="v1", client_status="complete", create_index=61))
    st.upsert_job(batch.model_copy(update={"stop": True}))
    assert sorted(_ids(eval_gc(st, CUTOFFS), "alloc")) == ["current", "old", "runs"]


def test_batch_evals_keep_for_the_batch_threshold() -> None:
    five_hours = NOW - 5 * HOUR
    st = state(
        evaluation("svc", of="gone", modify_time=five_hours),
        evaluation("bat", of="gone-too", type="batch", modify_time=five_hours),
    )
    assert _ids(eval_gc(st, CUTOFFS), "eval") == ["svc"]
    assert _ids(eval_gc(st, FORCED), "eval") == ["svc", "bat"]


def test_a_purged_jobs_evals_and_allocs_go_and_allocs_without_an_eval_too() -> None:
    st = state(
        evaluation("e1", of="purged"),
        alloc("p1", of="purged", eval_id="e1", desired_status="stop"),
        alloc("orphan", of="purged", eval_id="never-seen", client_status="complete"),
        alloc("orphan-live", of="purged", eval_id="never-seen", client_status="running"),
    )
    found = eval_gc(st, CUTOFFS)
    assert _ids(found, "eval") == ["e1"] and _ids(found, "alloc") == ["p1", "orphan"]


# (what, the job, its evals and allocs, is it collected)
JOB_CASES = [
    ("stopped service job, all old", job(stop=True), [evaluation("e")], [alloc("a", eval_id="e", desired_status="stop")], True),
    ("service job, dead but not stopped", job(), [evaluation("e")], [alloc("a", eval_id="e", client_status="complete")], False),
    ("batch job that finished", job(type="batch"), [evaluation("e", type="batch")],
     [alloc("a", eval_id="e", client_status="complete")], True),
    ("batch job with a pending eval", job(type="batch"), [evaluation("e", type="batch", status="pending")], [], False),
    ("batch job with a running alloc", job(type="batch"), [evaluation("e", type="batch")],
     [alloc("a", eval_id="e", client_status="running")], False),
    ("stopped job with a recent eval", job(stop=True), [evaluation("e", modify_time=RECENT)], [], False),
    ("stopped job submitted recently", job(stop=True, submit_time=RECENT), [evaluation("e")], [], False),
    ("stopped job without evals", job(stop=True), [], [], True),
    ("periodic parent, not stopped", job(type="batch", periodic=PeriodicConfig(spec="* * * * *")), [], [], False),
    ("periodic parent, stopped", job(type="batch", stop=True, periodic=PeriodicConfig(spec="* * * * *")), [], [], True),
    ("parameterized parent, not stopped", job(type="batch", parameterized_job=ParameterizedJobConfig()), [], [], False),
    ("parameterized parent, stopped", job(type="batch", stop=True, parameterized_job=ParameterizedJobConfig()), [], [],
     True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("the_job", "evals", "allocs", "collected"), [c[1:] for c in JOB_CASES], ids=[c[0] for c in JOB_CASES]
)
def test_which_jobs_go(
    the_job: Job, evals: list[Evaluation], allocs: list[Allocation], collected: bool
) -> None:
    found = job_gc(state(the_job, *evals, *allocs), CUTOFFS)
    if not collected:
        assert found.items == []
        return
    # Its allocs, then its evals, then the job: all of it.
    assert found.items == [
        *(("alloc", a.id) for a in allocs),
        *(("eval", e.id) for e in evals),
        ("job", ("default", "web")),
    ]


def test_deployments_go_once_inactive_old_and_no_live_alloc_has_them() -> None:
    def dep(dep_id: str, status: str = "successful", modify_time: int = OLD) -> Deployment:
        return Deployment(id=dep_id, job_id="web", status=status, modify_time=modify_time)

    st = state(
        dep("done"), dep("running", status="running"), dep("recent", modify_time=RECENT),
        dep("in-use", status="failed"), alloc("a", deployment_id="in-use", client_status="running"),
        dep("was-used", status="cancelled"), alloc("b", deployment_id="was-used", client_status="complete"),
    )  # fmt: skip
    assert _ids(deployment_gc(st, CUTOFFS), "deployment") == ["done", "was-used"]
    assert _ids(deployment_gc(st, FORCED), "deployment") == ["done", "recent", "was-used"]


def test_nodes_go_once_down_long_enough_with_no_live_alloc() -> None:
    def node(node_id: str, status: str = "down", at: int = OLD) -> Node:
        return Node(id=node_id, status=status, status_updated_at=at)

    st = state(
        node("gone"), node("ready", status="ready"), node("just-down", at=RECENT),
        node("busy"), alloc("a", node_id="busy", client_status="running"),
        node("emptied"), alloc("b", node_id="emptied", client_status="lost"),
    )  # fmt: skip
    assert _ids(node_gc(st, CUTOFFS), "node") == ["emptied", "gone"]
    assert _ids(node_gc(st, FORCED), "node") == ["emptied", "gone", "just-down"]


def test_restarts_go_once_ended_long_enough() -> None:
    st = state(
        JobRestart(id="old", job_id="web", status="complete", updated_at=OLD),
        JobRestart(id="new", job_id="web", status="cancelled", updated_at=RECENT),
        JobRestart(id="runs", job_id="web", status="running", updated_at=OLD),
    )
    assert _ids(restart_gc(st, CUTOFFS), "restart") == [("old", "default", "web")]
    assert len(_ids(restart_gc(st, FORCED), "restart")) == 2


def test_a_job_is_dead_as_the_api_derives_it() -> None:
    st = state(
        job(type="batch"), evaluation("e", type="batch"), alloc("a", eval_id="e", client_status="complete")
    )
    view = View(st)
    assert view.dead(st.jobs[("default", "web")])
    st.upsert_alloc(alloc("b", eval_id="e", client_status="pending"))
    assert not View(st).dead(st.jobs[("default", "web")])
