"""Rescheduling of failed allocs through the whole control loop (Nomad's reschedule block), in
the in-memory `Harness`: the reconciler's reschedule-now and reschedule-later
buckets (`reconciler.allocs.filter_by_rescheduleable`), its follow-up evals
(`reconciler.followups`), the replacement's placement with its tracker, the commit, and the
follow-up evals run in turn.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from drover.model import (
    Allocation,
    AllocDeploymentStatus,
    Constraint,
    Deployment,
    DeploymentState,
    DesiredTransition,
    DriverInfo,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    RescheduleEvent,
    ReschedulePolicy,
    Resources,
    Task,
    TaskGroup,
    TaskState,
)
from drover.model.canonicalize import canonicalize
from drover.model.deployment import (
    DEPLOYMENT_CANCELLED,
    DEPLOYMENT_FAILED,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_RUNNING,
    DEPLOYMENT_SUCCESSFUL,
    DESC_SUCCESSFUL,
)
from drover.model.durations import HOUR, MILLISECOND, MINUTE, SECOND
from drover.scheduler.harness import Harness
from drover.scheduler.plan import SchedulerResult

from .conftest import tracker

S = SECOND

_ids = itertools.count(1)


def cluster(h: Harness, n: int = 3) -> None:
    for i in range(n):
        h.state.upsert_node(
            Node(
                id=f"n{i}",
                name=f"n{i}",
                datacenter="dc1",
                attributes={"kernel.name": "linux", "unique.hostname": f"n{i}"},
                drivers={"mock": DriverInfo()},
                node_resources=NodeResources(
                    cpu=NodeCpuResources(cpu_shares=8000),
                    memory=NodeMemoryResources(memory_mb=16384),
                    disk=NodeDiskResources(disk_mb=100_000),
                ),
            )
        )


def make_job(
    job_id: str = "web",
    *,
    job_type: str = "service",
    count: int = 1,
    reschedule: ReschedulePolicy | None = None,
    **job_kw: Any,
) -> Job:
    tg = TaskGroup(
        name="g",
        count=count,
        tasks=[Task(name="t", driver="mock", resources=Resources(cpu=100, memory_mb=64))],
        reschedule_policy=reschedule,
    )
    return canonicalize(Job(id=job_id, type=job_type, datacenters=["dc1"], task_groups=[tg], **job_kw))


def new_eval(job: Job, trigger: str = "job-register") -> Evaluation:
    return Evaluation(
        id=f"ev-{next(_ids):05d}", job_id=job.id, namespace=job.namespace, type=job.type, triggered_by=trigger
    )


def register(h: Harness, job: Job) -> SchedulerResult:
    """Register `job` and let its first deployment finish: every alloc runs and is healthy, the
    deployment is successful (what the clients and the deployment watcher would report). A failed
    alloc of an active deployment is not rescheduled, so the tests start from a settled job."""
    h.state.upsert_job(job)
    res = h.process(new_eval(job))
    for a in h.state.allocs_by_job(job.namespace, job.id):
        if not a.terminal_status():
            h.state.upsert_alloc(
                a.model_copy(
                    update={
                        "client_status": "running",
                        "task_states": {"t": TaskState(state="running", started_at=h.now)},
                        "deployment_status": AllocDeploymentStatus(healthy=True, timestamp=h.now),
                    }
                )
            )
    for d in list(h.state.deployments.values()):
        if d.job_id == job.id and d.active():
            h.state.upsert_deployment(
                d.model_copy(update={"status": DEPLOYMENT_SUCCESSFUL, "status_description": DESC_SUCCESSFUL})
            )
    h.state.bump()
    return res


def live(h: Harness, job_id: str = "web") -> list[Allocation]:
    return sorted(
        (a for a in h.state.allocs_by_job("default", job_id) if not a.terminal_status()), key=lambda a: a.name
    )


def fail(h: Harness, alloc_id: str, at: int) -> Allocation:
    """The client reports the alloc failed, its task finished at `at`."""
    a = h.state.alloc(alloc_id)
    assert a is not None
    updated = a.model_copy(
        update={
            "client_status": "failed",
            "task_states": {"t": TaskState(state="dead", failed=True, finished_at=at)},
            "modify_time": at,
        }
    )
    h.state.upsert_alloc(updated)
    h.state.bump()
    return updated


def complete(h: Harness, alloc_id: str, at: int) -> Allocation:
    a = h.state.alloc(alloc_id)
    assert a is not None
    updated = a.model_copy(
        update={
            "client_status": "complete",
            "task_states": {"t": TaskState(state="dead", failed=False, finished_at=at)},
            "modify_time": at,
        }
    )
    h.state.upsert_alloc(updated)
    h.state.bump()
    return updated


def new_evals_since(h: Harness, n: int) -> list[Evaluation]:
    return h.created_evals[n:]


def failure_followups(h: Harness, since: int = 0) -> list[Evaluation]:
    return [e for e in h.created_evals[since:] if e.triggered_by == "alloc-failure"]


def _new_allocs(res: SchedulerResult, before: set[str]) -> list[Allocation]:
    return [a for a in res.plan.placements() if a.id not in before]


def test_failure_with_future_delay_creates_one_followup_eval() -> None:
    """(a) the service default delay (30 s) is in the future: reschedule later."""
    h = Harness()
    cluster(h)
    job = make_job()
    register(h, job)
    (orig,) = live(h)
    fail_at = h.now
    fail(h, orig.id, fail_at)
    n = len(h.created_evals)
    before = set(h.state.allocs)

    res = h.process(new_eval(job, "alloc-failure"))

    assert _new_allocs(res, before) == []
    upd = res.plan.annotations["g"]
    assert (upd.place, upd.reschedule_later, upd.reschedule_now) == (0, 1, 0)
    created = new_evals_since(h, n)
    assert len(created) == 1
    (fu,) = created
    assert fu.triggered_by == "alloc-failure"
    assert fu.wait_until == fail_at + 30 * S
    assert fu.job_id == job.id
    assert fu.status == "pending"
    stored = h.state.alloc(orig.id)
    assert stored is not None
    assert stored.followup_eval_id == fu.id
    assert stored.client_status == "failed"
    assert stored.desired_status == "run"


@pytest.mark.parametrize("job_id", ["web", "api", "db", "cache", "queue"])
def test_followup_eval_reschedules_on_another_node(job_id: str) -> None:
    """(b) the follow-up eval, run at its WaitUntil, places the replacement elsewhere."""
    h = Harness()
    cluster(h)
    job = make_job(job_id)
    register(h, job)
    (orig,) = live(h, job_id)
    fail(h, orig.id, h.now)
    h.process(new_eval(job, "alloc-failure"))
    (fu,) = failure_followups(h)

    h.now = fu.wait_until
    before = set(h.state.allocs)
    res = h.process(fu)

    new = _new_allocs(res, before)
    assert len(new) == 1
    repl = h.state.alloc(new[0].id)
    assert repl is not None
    assert repl.node_id != orig.node_id, "reschedule penalty: prefer a node not used before"
    assert repl.name == orig.name
    assert repl.previous_allocation == orig.id
    assert repl.reschedule_tracker is not None
    assert repl.reschedule_tracker.events == [
        RescheduleEvent(reschedule_time=h.now, prev_alloc_id=orig.id, prev_node_id=orig.node_id, delay=30 * S)
    ]
    old = h.state.alloc(orig.id)
    assert old is not None
    assert old.desired_status == "stop"
    assert old.desired_description == "alloc was rescheduled because it failed"
    assert old.next_allocation == repl.id
    upd = res.plan.annotations[g := "g"]
    assert (upd.place, upd.reschedule_now, upd.stop) == (1, 1, 1), g
    assert failure_followups(h)[1:] == [], "no further follow-up eval"


@pytest.mark.parametrize(
    ("failed_ago", "now_expected"),
    [
        (30 * S, True),  # due right now
        (29 * S + 500 * MILLISECOND, True),  # due in 0.5 s
        (29 * S, True),  # due in exactly 1 s: inside the window
        (29 * S - 100 * MILLISECOND, False),  # due in 1.1 s: later
        (10 * S, False),
        (5 * MINUTE, True),  # long overdue
    ],
)
def test_due_within_one_second_is_rescheduled_now(failed_ago: int, now_expected: bool) -> None:
    """(c)"""
    h = Harness()
    cluster(h)
    job = make_job()
    register(h, job)
    (orig,) = live(h)
    fail(h, orig.id, h.now - failed_ago)
    n = len(h.created_evals)
    before = set(h.state.allocs)

    res = h.process(new_eval(job, "alloc-failure"))

    upd = res.plan.annotations["g"]
    new = _new_allocs(res, before)
    if now_expected:
        assert (upd.reschedule_now, upd.reschedule_later, upd.place) == (1, 0, 1)
        assert len(new) == 1 and new[0].previous_allocation == orig.id
        assert failure_followups(h, n) == []
    else:
        assert (upd.reschedule_now, upd.reschedule_later, upd.place) == (0, 1, 0)
        assert new == []
        (fu,) = failure_followups(h, n)
        assert fu.wait_until == h.now - failed_ago + 30 * S


@pytest.mark.parametrize(
    ("offsets", "expected_batches"),
    [
        ([0, 0], [[0, 1]]),
        ([0, 4 * S], [[0, 1]]),
        ([0, 4 * S + 999 * MILLISECOND], [[0, 1]]),
        ([0, 5 * S], [[0], [1]]),  # Nomad batches strictly less than 5 s apart
        ([0, 6 * S], [[0], [1]]),
        ([0, 30 * S], [[0], [1]]),
        # batches are measured from their first failure: 0 and 3 share, 6 starts a new batch
        ([0, 3 * S, 6 * S], [[0, 1], [2]]),
        ([0, 2 * S, 4 * S], [[0, 1, 2]]),
        ([0, 10 * S, 12 * S, 30 * S], [[0], [1, 2], [3]]),
    ],
)
def test_failures_due_close_together_share_one_followup(
    offsets: list[int], expected_batches: list[list[int]]
) -> None:
    """(d)"""
    h = Harness()
    cluster(h, 4)
    job = make_job(count=len(offsets))
    register(h, job)
    allocs = live(h)
    assert len(allocs) == len(offsets)
    for a, off in zip(allocs, offsets, strict=True):
        fail(h, a.id, h.now + off)

    h.process(new_eval(job, "alloc-failure"))

    evals = failure_followups(h)
    assert len(evals) == len(expected_batches)
    by_id = {e.id: e for e in evals}
    groups: dict[str, list[int]] = {}
    for i, a in enumerate(allocs):
        stored = h.state.alloc(a.id)
        assert stored is not None
        assert stored.followup_eval_id in by_id
        groups.setdefault(stored.followup_eval_id, []).append(i)
    got = sorted(groups.values())
    assert got == sorted(expected_batches)
    for eid, members in groups.items():
        # WaitUntil is the due time of the batch's first failure.
        assert by_id[eid].wait_until == h.now + min(offsets[i] for i in members) + 30 * S


@pytest.mark.parametrize(
    ("pol", "history_ages", "rescheduled"),
    [
        (
            ReschedulePolicy(
                attempts=1, interval=HOUR, delay=5 * S, delay_function="constant", unlimited=False
            ),
            [10 * MINUTE],
            False,
        ),
        (
            ReschedulePolicy(
                attempts=2, interval=HOUR, delay=5 * S, delay_function="constant", unlimited=False
            ),
            [10 * MINUTE],
            True,
        ),
        (
            ReschedulePolicy(
                attempts=2, interval=HOUR, delay=5 * S, delay_function="constant", unlimited=False
            ),
            [10 * MINUTE, 20 * MINUTE],
            False,
        ),
        # an attempt older than the interval no longer counts
        (
            ReschedulePolicy(
                attempts=1, interval=HOUR, delay=5 * S, delay_function="constant", unlimited=False
            ),
            [2 * HOUR],
            True,
        ),
        # disabled
        (ReschedulePolicy(attempts=0, unlimited=False, delay=5 * S, delay_function="constant"), [], False),
    ],
)
def test_attempts_exhausted_means_no_replacement(
    pol: ReschedulePolicy, history_ages: list[int], rescheduled: bool
) -> None:
    """(e) the failed alloc already carries a tracker (it is itself a replacement). Service jobs
    default to unlimited, so a limited policy must say unlimited = false (Nomad rejects attempts
    with unlimited as ambiguous)."""
    h = Harness()
    cluster(h)
    job = make_job(reschedule=pol)
    register(h, job)
    (orig,) = live(h)
    fail_at = h.now - 10 * S  # the 5 s delay has passed: due now if eligible
    tr = tracker(*[(fail_at - age, 5 * S) for age in history_ages]) if history_ages else None
    h.state.upsert_alloc(orig.model_copy(update={"reschedule_tracker": tr}))
    fail(h, orig.id, fail_at)
    before = set(h.state.allocs)

    res = h.process(new_eval(job, "alloc-failure"))

    new = _new_allocs(res, before)
    if rescheduled:
        assert len(new) == 1 and new[0].previous_allocation == orig.id
        assert res.plan.annotations["g"].reschedule_now == 1
    else:
        assert new == []
        assert res.plan.annotations["g"].place == 0
        assert failure_followups(h) == []
        stored = h.state.alloc(orig.id)
        assert stored is not None and stored.followup_eval_id == ""
        assert stored.desired_status == "run"
        assert res.blocked_eval is None


def _seed_deployment(h: Harness, job: Job, status: str) -> Deployment:
    dep = Deployment(
        id="dep-1",
        job_id=job.id,
        job_version=job.version,
        job_create_index=job.create_index,
        status=status,
        task_groups={"g": DeploymentState(desired_total=1, placed_allocs=1)},
        create_index=h.state.index + 1,
    )
    h.state.upsert_deployment(dep)
    h.state.bump()
    return dep


@pytest.mark.parametrize(
    ("status", "belongs", "marked", "rescheduled"),
    [
        (DEPLOYMENT_RUNNING, True, False, False),
        (DEPLOYMENT_PAUSED, True, False, False),  # paused is still active
        (DEPLOYMENT_RUNNING, False, False, True),  # an alloc outside the deployment is rescheduled
        (DEPLOYMENT_RUNNING, True, True, True),  # DesiredTransition.Reschedule lets it through
        (DEPLOYMENT_SUCCESSFUL, True, False, True),
        (DEPLOYMENT_FAILED, True, False, True),
        (DEPLOYMENT_CANCELLED, True, False, True),
    ],
)
def test_no_reschedule_during_active_deployment(
    status: str, belongs: bool, marked: bool, rescheduled: bool
) -> None:
    """(f) Rescheduling during deployments, as Nomad does it."""
    h = Harness()
    cluster(h)
    # No update block: the test controls the deployment itself.
    job = make_job()
    job.task_groups[0].update = None
    job.update = None
    register(h, job)
    (orig,) = live(h)
    dep = _seed_deployment(h, job, status)
    if belongs:
        h.state.upsert_alloc(orig.model_copy(update={"deployment_id": dep.id}))
    if marked:
        cur = h.state.alloc(orig.id)
        assert cur is not None
        h.state.upsert_alloc(
            cur.model_copy(update={"desired_transition": DesiredTransition(reschedule=True)})
        )
    fail(h, orig.id, h.now)
    before = set(h.state.allocs)

    res = h.process(new_eval(job, "alloc-failure"))

    assert _new_allocs(res, before) == []  # 30 s delay: never placed in this eval
    if rescheduled:
        assert len(failure_followups(h)) == 1
        assert res.plan.annotations["g"].reschedule_later == 1
    else:
        assert failure_followups(h) == []
        assert res.plan.annotations["g"].reschedule_later == 0
        stored = h.state.alloc(orig.id)
        assert stored is not None and stored.followup_eval_id == ""


def test_active_deployment_blocks_reschedule_now_too() -> None:
    """(f) even an alloc that is already due is not replaced while its deployment runs."""
    h = Harness()
    cluster(h)
    job = make_job()
    job.task_groups[0].update = None
    job.update = None
    register(h, job)
    (orig,) = live(h)
    dep = _seed_deployment(h, job, DEPLOYMENT_RUNNING)
    h.state.upsert_alloc(orig.model_copy(update={"deployment_id": dep.id}))
    fail(h, orig.id, h.now - HOUR)
    before = set(h.state.allocs)

    res = h.process(new_eval(job, "alloc-failure"))

    assert _new_allocs(res, before) == []
    assert res.plan.annotations["g"].reschedule_now == 0
    assert failure_followups(h) == []


@pytest.mark.parametrize("desired_stop", [False, True])
def test_batch_alloc_that_completed_is_never_replaced(desired_stop: bool) -> None:
    """(g)"""
    h = Harness()
    cluster(h)
    job = make_job("report", job_type="batch", count=2)
    register(h, job)
    a0, a1 = live(h, "report")
    done = complete(h, a0.id, h.now - MINUTE)
    if desired_stop:
        h.state.upsert_alloc(done.model_copy(update={"desired_status": "stop"}))
        h.state.bump()
    n = len(h.created_evals)
    before = set(h.state.allocs)

    h.now += HOUR
    res = h.process(new_eval(job, "alloc-stop" if desired_stop else "job-register"))

    assert _new_allocs(res, before) == []
    upd = res.plan.annotations["g"]
    assert (upd.place, upd.reschedule_now, upd.reschedule_later) == (0, 0, 0)
    assert new_evals_since(h, n) == []
    assert a1.id in {a.id for a in live(h, "report")}


@pytest.mark.parametrize("old_desired", ["run", "stop"])
@pytest.mark.parametrize("change", ["in-place", "destructive"])
def test_completed_batch_allocs_of_an_older_version_do_not_count(change: str, old_desired: str) -> None:
    """(g) bis: "never replaced" holds for the job version that ran. Registering a new version of
    a finished batch job runs it again: Nomad's reconciler sets aside terminal batch allocs of older
    versions (filterOldTerminalAllocs; TestReconciler_Batch_Rerun expects Place 10, no destructive
    update) and places fresh allocs for the new version."""
    h = Harness()
    cluster(h)
    job = make_job("report", job_type="batch", count=2)
    register(h, job)
    for a in live(h, "report"):
        done = complete(h, a.id, h.now)
        if old_desired == "stop":
            h.state.upsert_alloc(done.model_copy(update={"desired_status": "stop"}))
    h.state.bump()
    job1 = job.model_copy(deep=True)
    job1.version = 1
    if change == "in-place":
        job1.task_groups[0].constraints = [Constraint(ltarget="${attr.kernel.name}", rtarget="linux")]
    else:
        job1.task_groups[0].tasks[0].env = {"RUN": "2"}
    h.state.upsert_job(job1)
    before = set(h.state.allocs)

    res = h.process(new_eval(job1))

    u = res.plan.annotations["g"]
    assert (u.place, u.destructive_update, u.in_place_update) == (2, 0, 0)
    new = _new_allocs(res, before)
    assert sorted(a.name for a in new) == ["report.g[0]", "report.g[1]"]
    assert all(a.job_version == 1 for a in new)


def test_second_failure_eval_does_not_duplicate_followup() -> None:
    """Another eval for the job before the follow-up is due changes nothing: the failed alloc
    already has its FollowupEvalID."""
    h = Harness()
    cluster(h)
    job = make_job()
    register(h, job)
    (orig,) = live(h)
    fail(h, orig.id, h.now)
    h.process(new_eval(job, "alloc-failure"))
    (fu,) = failure_followups(h)
    h.now += 10 * S
    before = set(h.state.allocs)
    res = h.process(new_eval(job, "node-update"))
    assert _new_allocs(res, before) == []
    assert failure_followups(h) == [fu]
    stored = h.state.alloc(orig.id)
    assert stored is not None and stored.followup_eval_id == fu.id
    assert stored.desired_status == "run"


@pytest.mark.parametrize(("job_type", "replaced"), [("service", True), ("batch", False)])
def test_completed_alloc_replaced_only_for_service(job_type: str, replaced: bool) -> None:
    """A service alloc must keep running: one that completed is replaced (Nomad ignores it and
    places anew); a batch alloc that completed successfully is done."""
    h = Harness()
    cluster(h)
    job = make_job("w", job_type=job_type, count=1)
    register(h, job)
    (a,) = live(h, "w")
    complete(h, a.id, h.now)
    before = set(h.state.allocs)
    res = h.process(new_eval(job, "alloc-stop"))
    new = _new_allocs(res, before)
    assert len(new) == (1 if replaced else 0)
    assert res.plan.annotations["g"].place == (1 if replaced else 0)
    assert failure_followups(h) == []


def test_batch_default_policy_reschedules_exactly_once() -> None:
    """(h) attempts 1 in 24 h, 5 s constant."""
    h = Harness()
    cluster(h)
    job = make_job("crunch", job_type="batch")
    register(h, job)
    (orig,) = live(h, "crunch")

    # First failure: one follow-up eval 5 s later.
    fail_at = h.now
    fail(h, orig.id, fail_at)
    res = h.process(new_eval(job, "alloc-failure"))
    assert res.plan.annotations["g"].reschedule_later == 1
    (fu,) = failure_followups(h)
    assert fu.wait_until == fail_at + 5 * S

    # The follow-up places the one replacement.
    h.now = fu.wait_until
    before = set(h.state.allocs)
    res = h.process(fu)
    new = _new_allocs(res, before)
    assert len(new) == 1
    repl = h.state.alloc(new[0].id)
    assert repl is not None
    assert repl.previous_allocation == orig.id
    assert repl.reschedule_tracker is not None
    assert [e.delay for e in repl.reschedule_tracker.events] == [5 * S]
    assert repl.node_id != orig.node_id

    # The replacement fails too: the single attempt is used up.
    h.now += MINUTE
    fail(h, repl.id, h.now)
    n = len(h.created_evals)
    before = set(h.state.allocs)
    res = h.process(new_eval(job, "alloc-failure"))
    assert _new_allocs(res, before) == []
    assert failure_followups(h, n) == []
    upd = res.plan.annotations["g"]
    assert (upd.place, upd.reschedule_now, upd.reschedule_later) == (0, 0, 0)

    # ... even much later within the 24 h interval.
    h.now += 12 * HOUR
    before = set(h.state.allocs)
    res = h.process(new_eval(job, "alloc-failure"))
    assert _new_allocs(res, before) == []


def test_batch_failure_is_rescheduled_again_after_interval() -> None:
    """The batch default interval is 24 h: an attempt older than that does not count."""
    h = Harness()
    cluster(h)
    job = make_job("crunch", job_type="batch")
    register(h, job)
    (orig,) = live(h, "crunch")
    # It is itself a replacement made 25 h ago.
    h.state.upsert_alloc(orig.model_copy(update={"reschedule_tracker": tracker((h.now - 25 * HOUR, 5 * S))}))
    fail(h, orig.id, h.now - 10 * S)
    before = set(h.state.allocs)
    res = h.process(new_eval(job, "alloc-failure"))
    new = _new_allocs(res, before)
    assert len(new) == 1
    # The expired event is dropped from the new tracker.
    assert new[0].reschedule_tracker is not None
    assert [e.prev_alloc_id for e in new[0].reschedule_tracker.events] == [orig.id]


def test_service_chain_through_harness_doubles_delays() -> None:
    """A chain of failures, each replacement failing 1 s after it starts: the follow-up evals are
    spaced 30 s, 60 s, 120 s after the failures (service default, exponential)."""
    h = Harness()
    cluster(h, 4)
    job = make_job()
    register(h, job)
    (cur,) = live(h)
    waits: list[int] = []
    nodes: list[str] = [cur.node_id]
    for _ in range(4):
        h.now += S
        fail_at = h.now
        fail(h, cur.id, fail_at)
        n = len(h.created_evals)
        h.process(new_eval(job, "alloc-failure"))
        (fu,) = failure_followups(h, n)
        waits.append(fu.wait_until - fail_at)
        h.now = fu.wait_until
        before = set(h.state.allocs)
        res = h.process(fu)
        (nxt,) = _new_allocs(res, before)
        stored = h.state.alloc(nxt.id)
        assert stored is not None
        cur = stored
        nodes.append(cur.node_id)
    assert waits == [30 * S, 60 * S, 120 * S, 240 * S]
    assert cur.reschedule_tracker is not None
    assert [e.delay for e in cur.reschedule_tracker.events] == waits
    # Every previous node is penalised: the first four placements use four distinct nodes.
    assert len(set(nodes[:4])) == 4


def test_system_jobs_never_reschedule() -> None:
    """System jobs have no reschedule policy: no delayed follow-up, no tracker."""
    h = Harness()
    cluster(h)
    job = make_job("agent", job_type="system")
    assert job.task_groups[0].reschedule_policy is None
    register(h, job)
    allocs = live(h, "agent")
    assert len(allocs) == 3
    fail(h, allocs[0].id, h.now)
    n = len(h.created_evals)
    before = set(h.state.allocs)
    res = h.process(new_eval(job, "alloc-failure"))
    assert [e for e in new_evals_since(h, n) if e.triggered_by == "alloc-failure"] == []
    for a in _new_allocs(res, before):
        assert a.reschedule_tracker is None
    assert res.plan.annotations.get("g") is None or res.plan.annotations["g"].reschedule_later == 0
