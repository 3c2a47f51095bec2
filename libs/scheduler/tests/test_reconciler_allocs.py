"""The reconciler's alloc sets and filters (`drover.scheduler.reconciler.allocs`), table by table:
which bucket each alloc lands in, by the health of its node and by its need to be rescheduled."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from drover.model import (
    Allocation,
    AllocState,
    Deployment,
    DesiredTransition,
    Disconnect,
    Job,
    Node,
    ReschedulePolicy,
    TaskState,
)
from drover.model.alloc import ALLOC_CLIENT_UNKNOWN, ALLOC_STATE_FIELD_CLIENT_STATUS
from drover.model.deployment import DEPLOYMENT_RUNNING, DEPLOYMENT_SUCCESSFUL
from drover.model.durations import MINUTE, SECOND
from drover.model.node import NODE_STATUS_DISCONNECTED, NODE_STATUS_DOWN, NODE_STATUS_READY
from drover.scheduler.reconciler.allocs import (
    AllocSet,
    RescheduleSplit,
    TaintedSplit,
    diff,
    expired,
    filter_by_rescheduleable,
    filter_by_tainted,
    name_order,
    old_terminal,
    union,
)
from drover.scheduler.reconciler.inputs import ClusterState, JobState

from .conftest import make_job

NOW = 1_700_000_000_000_000_000
S = SECOND
EVAL = "eval-now"


def job_state(*, lost_after: int = 0, replace: bool = True, batch: bool = False, **tg_kw: Any) -> JobState:
    job = make_job(
        job_type="batch" if batch else "service",
        disconnect=Disconnect(lost_after=lost_after, replace=replace),
        **tg_kw,
    )
    return state_of(job, batch=batch)


def state_of(job: Job, *, batch: bool = False, deployment: Deployment | None = None) -> JobState:
    return JobState(
        job_id=job.id,
        namespace=job.namespace,
        job=job,
        batch=batch,
        deployment=deployment,
        job_lookup=lambda a: None,
    )


def alloc(alloc_id: str = "a", *, unknown_since: int = 0, **kw: Any) -> Allocation:
    """An alloc of group g on node n1; `unknown_since`: its client status last turned unknown
    then (it awaits reconnecting)."""
    states = (
        [AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value=ALLOC_CLIENT_UNKNOWN, time=unknown_since)]
        if unknown_since
        else []
    )
    kw.setdefault("client_status", "running")
    return Allocation(
        id=alloc_id,
        name=kw.pop("name", "web.g[0]"),
        job_id="web",
        task_group="g",
        node_id="n1",
        alloc_states=states,
        **kw,
    )


def node(status: str, **kw: Any) -> Node:
    return Node(id="n1", name="n1", status=status, **kw)


def buckets(split: TaintedSplit | RescheduleSplit, alloc_id: str) -> list[str]:
    """The names of the buckets holding `alloc_id` (empty: dropped)."""
    out = [f.name for f in fields(split) if f.name != "later" and alloc_id in getattr(split, f.name)]
    if isinstance(split, RescheduleSplit) and any(a.id == alloc_id for a, _ in split.later):
        out.append("later")
    return out


# --------------------------------------------------------------------------------------------
# set operations
# --------------------------------------------------------------------------------------------


def _set(*ids: str) -> AllocSet:
    return {i: alloc(i) for i in ids}


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ([], []),
        ([("a",)], ["a"]),
        ([("a", "b"), ("b", "c")], ["a", "b", "c"]),
        ([(), ("c",), ("a",)], ["c", "a"]),
    ],
)
def test_union(sets: list[tuple[str, ...]], expected: list[str]) -> None:
    assert list(union(*(_set(*s) for s in sets))) == expected


@pytest.mark.parametrize(
    ("base", "others", "expected"),
    [
        (("a", "b", "c"), [], ["a", "b", "c"]),
        (("a", "b", "c"), [("b",)], ["a", "c"]),
        (("a", "b", "c"), [("a",), ("c", "d")], ["b"]),
        ((), [("a",)], []),
    ],
)
def test_diff(base: tuple[str, ...], others: list[tuple[str, ...]], expected: list[str]) -> None:
    assert list(diff(_set(*base), *(_set(*o) for o in others))) == expected


def test_name_order_is_by_index_then_name_then_id() -> None:
    s = {
        a.id: a
        for a in (
            alloc("z", name="web.g[10]"),
            alloc("y", name="web.g[2]"),
            alloc("x", name="web.g[2]"),
            alloc("w", name="odd"),
            alloc("v", name="web.g[0]"),
        )
    }
    assert [a.id for a in name_order(s)] == ["w", "v", "x", "y", "z"]


@pytest.mark.parametrize(
    ("kw", "is_old"),
    [
        ({"client_status": "complete", "job_version": 1}, True),
        ({"client_status": "failed", "job_version": 1}, True),
        ({"desired_status": "stop", "job_version": 1}, True),
        ({"client_status": "complete", "job_version": 2}, False),
        ({"client_status": "running", "job_version": 1}, False),
    ],
)
def test_old_terminal(kw: dict[str, Any], is_old: bool) -> None:
    assert ("a" in old_terminal({"a": alloc(**kw)}, 2)) is is_old


@pytest.mark.parametrize(
    ("kw", "lost_after", "now", "is_expired"),
    [
        ({"client_status": "unknown", "unknown_since": NOW - 2 * MINUTE}, MINUTE, NOW, True),
        ({"client_status": "unknown", "unknown_since": NOW - MINUTE}, MINUTE, NOW, True),
        ({"client_status": "unknown", "unknown_since": NOW - 30 * S}, MINUTE, NOW, False),
        # Without lost_after an alloc never waits as unknown, so it never expires either.
        ({"client_status": "unknown", "unknown_since": NOW - 2 * MINUTE}, 0, NOW, False),
        ({"client_status": "running", "unknown_since": NOW - 2 * MINUTE}, MINUTE, NOW, False),
        ({"client_status": "unknown"}, MINUTE, NOW, False),
    ],
    ids=["long-past", "exactly-at", "within", "no-lost-after", "not-unknown", "never-unknown"],
)
def test_expired(kw: dict[str, Any], lost_after: int, now: int, is_expired: bool) -> None:
    assert expired(alloc(**kw), job_state(lost_after=lost_after), now) is is_expired


# --------------------------------------------------------------------------------------------
# by the health of the alloc's node
# --------------------------------------------------------------------------------------------

READY, DOWN, DISC = NODE_STATUS_READY, NODE_STATUS_DOWN, NODE_STATUS_DISCONNECTED
GONE = "gone"  # tainted: the node no longer exists
FINE = "fine"  # not tainted


@pytest.mark.parametrize(
    ("kw", "node_status", "lost_after", "expected"),
    [
        # 1. untainted
        ({}, FINE, 0, "untainted"),
        ({}, READY, 0, "untainted"),  # a draining node, the alloc not yet marked to migrate
        ({"client_status": "complete"}, DOWN, 0, "untainted"),
        ({"client_status": "unknown", "unknown_since": NOW - 10 * S}, DISC, MINUTE, "untainted"),
        ({"client_status": "running", "unknown_since": NOW - 10 * S}, DISC, MINUTE, "untainted"),
        # 2. migrate
        ({"desired_transition": DesiredTransition(migrate=True)}, READY, 0, "migrate"),
        ({"desired_transition": DesiredTransition(migrate=True)}, FINE, 0, "migrate"),
        # 3. lost
        ({}, DOWN, 0, "lost"),
        ({}, GONE, 0, "lost"),
        ({}, DISC, 0, "lost"),
        ({"client_status": "pending"}, DISC, MINUTE, "lost"),
        ({"client_status": "unknown", "unknown_since": NOW - 2 * MINUTE}, READY, MINUTE, "lost"),
        # 4. disconnecting
        ({}, DISC, MINUTE, "disconnecting"),
        # 5. reconnecting
        ({"client_status": "unknown", "unknown_since": NOW - 10 * S}, READY, MINUTE, "reconnecting"),
        ({"client_status": "running", "unknown_since": NOW - 10 * S}, FINE, MINUTE, "reconnecting"),
        ({"client_status": "failed", "unknown_since": NOW - 10 * S}, READY, MINUTE, "reconnecting"),
        # 6. ignore
        (
            {"client_status": "failed", "desired_status": "stop", "unknown_since": NOW - 10 * S},
            FINE,
            MINUTE,
            "ignore",
        ),
        # 7. expiring
        ({"client_status": "unknown", "unknown_since": NOW - 2 * MINUTE}, DISC, MINUTE, "expiring"),
    ],
    ids=[
        "healthy-node",
        "draining-not-marked",
        "terminal-on-down-node",
        "unknown-waiting",
        "unknown-reported-running-before-its-node-is-back",
        "marked-migrate-on-draining-node",
        "marked-migrate-anywhere",
        "down-node",
        "node-gone",
        "disconnected-without-lost-after",
        "disconnected-before-it-started",
        "reconnected-too-late",
        "disconnected-running",
        "reconnected-in-time",
        "running-again-in-time",
        "failed-while-disconnected",
        "failed-while-disconnected-and-stopped",
        "unknown-past-lost-after",
    ],
)
def test_filter_by_tainted(kw: dict[str, Any], node_status: str, lost_after: int, expected: str) -> None:
    a = alloc(**kw)
    tainted: dict[str, Node | None] = {}
    if node_status == GONE:
        tainted["n1"] = None
    elif node_status != FINE:
        tainted["n1"] = node(node_status)
    split = filter_by_tainted({a.id: a}, job_state(lost_after=lost_after), ClusterState([a], tainted), NOW)
    assert buckets(split, a.id) == [expected]


def test_without_disconnected_client_support_a_disconnected_node_loses_its_allocs() -> None:
    a = alloc()
    cluster = ClusterState([a], {"n1": node(DISC)}, supports_disconnected_clients=False)
    split = filter_by_tainted({a.id: a}, job_state(lost_after=MINUTE), cluster, NOW)
    assert buckets(split, a.id) == ["lost"]


def test_filter_by_tainted_keeps_every_alloc_once_in_order() -> None:
    allocs = [alloc(f"a{i}", name=f"web.g[{i}]") for i in range(5)]
    tainted: dict[str, Node | None] = {"n1": node(DOWN)}
    split = filter_by_tainted({a.id: a for a in allocs}, job_state(), ClusterState(allocs, tainted), NOW)
    assert list(split.lost) == [a.id for a in allocs]
    assert not (split.untainted or split.migrate or split.disconnecting or split.reconnecting)


# --------------------------------------------------------------------------------------------
# by the need to be rescheduled
# --------------------------------------------------------------------------------------------

CONSTANT_5S = ReschedulePolicy(delay=5 * S, delay_function="constant", unlimited=True)


def failed_at(t: int, **kw: Any) -> dict[str, Any]:
    return {
        "client_status": "failed",
        "task_states": {"t": TaskState(state="dead", failed=True, finished_at=t)},
        **kw,
    }


def completed(**kw: Any) -> dict[str, Any]:
    return {
        "client_status": "complete",
        "task_states": {"t": TaskState(state="dead", finished_at=NOW - S)},
        **kw,
    }


@pytest.mark.parametrize(
    ("kw", "batch", "expected"),
    [
        # 8. reschedule now
        (failed_at(NOW - 10 * S), False, ["now"]),
        (failed_at(NOW - 4500 * 1_000_000), False, ["now"]),  # due within the window
        (failed_at(NOW, followup_eval_id=EVAL), False, ["now"]),
        ({"desired_transition": DesiredTransition(force_reschedule=True)}, False, ["now"]),
        (failed_at(NOW - 10 * S), True, ["now"]),
        # 9. reschedule later (and untainted meanwhile)
        (failed_at(NOW), False, ["untainted", "later"]),
        (failed_at(NOW), True, ["untainted", "later"]),
        # 10. untainted
        ({}, False, ["untainted"]),
        ({}, True, ["untainted"]),
        (failed_at(NOW, followup_eval_id="eval-other"), False, ["untainted"]),
        (completed(desired_status="stop"), True, ["untainted"]),
        # dropped
        (failed_at(NOW - 10 * S, next_allocation="b"), False, []),
        (completed(), False, []),
        ({"client_status": "lost"}, False, []),
        ({"desired_status": "stop"}, False, []),
        (failed_at(NOW - 10 * S, desired_status="stop"), True, []),
    ],
    ids=[
        "failed-due",
        "failed-due-within-window",
        "its-followup-eval",
        "forced",
        "batch-failed-due",
        "failed-due-later",
        "batch-failed-due-later",
        "running",
        "batch-running",
        "followup-already-created",
        "batch-done",
        "already-replaced",
        "service-completed",
        "service-lost",
        "stopped-by-server",
        "batch-failed-and-stopped",
    ],
)
def test_filter_by_rescheduleable(kw: dict[str, Any], batch: bool, expected: list[str]) -> None:
    a = alloc(**kw)
    js = job_state(batch=batch, reschedule_policy=CONSTANT_5S)
    split = filter_by_rescheduleable(
        {a.id: a}, disconnecting=False, job=js, deployment=None, eval_id=EVAL, now=NOW
    )
    assert buckets(split, a.id) == expected


def test_reschedule_later_carries_the_due_time() -> None:
    a = alloc(**failed_at(NOW))
    js = job_state(reschedule_policy=CONSTANT_5S)
    split = filter_by_rescheduleable(
        {a.id: a}, disconnecting=False, job=js, deployment=None, eval_id=EVAL, now=NOW
    )
    assert [(x.id, when) for x, when in split.later] == [(a.id, NOW + 5 * S)]


@pytest.mark.parametrize(
    ("status", "marked", "expected"),
    [
        (DEPLOYMENT_RUNNING, False, ["untainted"]),
        (DEPLOYMENT_RUNNING, True, ["now"]),
        (DEPLOYMENT_SUCCESSFUL, False, ["now"]),
    ],
    ids=["active-deployment-holds-it", "marked-to-reschedule", "deployment-over"],
)
def test_no_reschedule_during_the_allocs_active_deployment(
    status: str, marked: bool, expected: list[str]
) -> None:
    a = alloc(
        **failed_at(NOW - 10 * S, deployment_id="d1", desired_transition=DesiredTransition(reschedule=marked))
    )
    js = job_state(reschedule_policy=CONSTANT_5S)
    dep = Deployment(id="d1", job_id="web", status=status)
    split = filter_by_rescheduleable(
        {a.id: a}, disconnecting=False, job=js, deployment=dep, eval_id=EVAL, now=NOW
    )
    assert buckets(split, a.id) == expected


@pytest.mark.parametrize(
    ("client_status", "replace", "expected"),
    [
        ("running", True, ["now"]),
        ("running", False, ["untainted"]),
        ("unknown", True, []),
    ],
    ids=["replace", "no-replace", "already-unknown"],
)
def test_disconnecting_allocs_are_replaced_at_once_with_disconnect_replace(
    client_status: str, replace: bool, expected: list[str]
) -> None:
    a = alloc(client_status=client_status)
    js = job_state(lost_after=MINUTE, replace=replace, reschedule_policy=CONSTANT_5S)
    split = filter_by_rescheduleable(
        {a.id: a}, disconnecting=True, job=js, deployment=None, eval_id=EVAL, now=NOW
    )
    assert buckets(split, a.id) == expected
