"""The eval broker's rules (Nomad's eval broker), table by table."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from drover.model import Allocation, Evaluation, Job, Node, TaskGroup
from drover.model.durations import SECOND
from drover.model.events import (
    AllocClientUpdate,
    AllocsClientUpdated,
    Event,
    JobRegistered,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
    PlanApplied,
)
from drover.model.node import DrainStrategy
from drover.scheduler.broker import CANCELED_NEWER_EVAL, EvalBroker, eval_cost, unblocked_classes

NOW = 1_000_000_000_000


def evaluation(
    eid: str, job: str = "a", prio: int = 50, idx: int = 1, status: str = "pending", **kw: object
) -> Evaluation:
    return Evaluation(
        id=eid, job_id=job, priority=prio, create_index=idx, modify_index=idx, status=status, **kw
    )  # type: ignore[arg-type]


def test_priority_then_age_across_jobs() -> None:
    b = EvalBroker()
    for e in (
        evaluation("low", "j1", 30, 1),
        evaluation("old", "j2", 50, 2),
        evaluation("new", "j3", 50, 3),
        evaluation("high", "j4", 90, 4),
    ):
        b.upsert(e, NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["high", "old", "new", "low"]


def test_core_evals_are_left_to_the_garbage_collector() -> None:
    """A `_core` eval is never handed to a scheduling worker, pending or blocked, and takes no
    job's slot (Nomad serves its `_core` queue from the leader)."""
    b = EvalBroker()
    b.upsert(evaluation("gc", "eval-gc", 32767, 1, type="_core", triggered_by="scheduled"), NOW)
    b.upsert(evaluation("gc2", "a", 32767, 2, status="blocked", type="_core"), NOW)
    b.upsert(evaluation("job", "a", 50, 3), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["job"]
    assert b.due(NOW + SECOND).dispatch == [] and b.blocked == {}


def test_one_eval_per_job_in_flight_then_best_pending_and_rest_canceled() -> None:
    b = EvalBroker()
    b.upsert(evaluation("first", idx=1), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["first"]
    for e in (evaluation("p1", idx=2), evaluation("p2", idx=3), evaluation("p3", prio=70, idx=4)):
        b.upsert(e, NOW)
    assert b.due(NOW).dispatch == []  # the job is busy
    b.upsert(evaluation("first", idx=1, status="complete"), NOW)
    out = b.due(NOW)
    assert [e.id for e in out.dispatch] == ["p3"]  # highest priority wins
    assert sorted(e.id for e in out.cancel) == ["p1", "p2"]
    assert {e.status_description for e in out.cancel} == {CANCELED_NEWER_EVAL}


def test_same_priority_newest_pending_wins() -> None:
    b = EvalBroker()
    b.upsert(evaluation("x", idx=1), NOW)
    b.due(NOW)
    b.upsert(evaluation("y", idx=2), NOW)
    b.upsert(evaluation("z", idx=3), NOW)
    b.upsert(evaluation("x", idx=1, status="complete"), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["z"]


def test_delayed_until_wait_until() -> None:
    b = EvalBroker()
    b.upsert(evaluation("later", wait_until=NOW + 5_000_000_000), NOW)
    assert b.due(NOW).dispatch == []
    assert b.next_wakeup() == NOW + 5_000_000_000
    assert [e.id for e in b.due(NOW + 5_000_000_000).dispatch] == ["later"]


def test_blocked_released_by_eligible_class_only() -> None:
    b = EvalBroker()
    b.upsert(
        evaluation(
            "blk", status="blocked", class_eligibility={"small": False, "big": True}, snapshot_index=10
        ),
        NOW,
    )
    assert b.due(NOW).dispatch == []
    b.unblock("small", 11)
    assert b.due(NOW).dispatch == []  # that class cannot run it
    b.unblock("big", 12)
    assert [e.id for e in b.due(NOW).dispatch] == ["blk"]


def test_unblock_before_the_blocked_eval_arrived_is_not_missed() -> None:
    b = EvalBroker()
    b.unblock("any", 15)
    b.upsert(evaluation("blk", status="blocked", snapshot_index=12, class_eligibility={"any": True}), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["blk"]
    b2 = EvalBroker()
    b2.unblock("any", 15)
    b2.upsert(evaluation("blk", status="blocked", snapshot_index=20, class_eligibility={"any": True}), NOW)
    assert b2.due(NOW).dispatch == []  # its snapshot already saw that capacity


def test_one_blocked_eval_per_job_newer_wins() -> None:
    b = EvalBroker()
    b.upsert(evaluation("old", status="blocked", idx=1), NOW)
    b.upsert(evaluation("new", status="blocked", idx=2), NOW)
    out = b.due(NOW)
    assert [e.id for e in out.cancel] == ["old"]
    assert b.blocked[("default", "a")].id == "new"


def test_max_plan_attempts_blocked_eval_released_every_minute() -> None:
    b = EvalBroker()
    b.upsert(evaluation("mp", status="blocked", triggered_by="max-plan-attempts", modify_time=NOW), NOW)
    assert b.due(NOW + 59_000_000_000).dispatch == []
    assert [e.id for e in b.due(NOW + 60_000_000_000).dispatch] == ["mp"]


def test_reblocked_eval_frees_the_job_and_waits_again() -> None:
    b = EvalBroker()
    b.upsert(evaluation("blk", status="blocked", snapshot_index=1), NOW)
    b.unblock("c", 2)
    assert [e.id for e in b.due(NOW).dispatch] == ["blk"]
    b.upsert(evaluation("blk", status="blocked", snapshot_index=3, idx=1), NOW)  # re-blocked
    assert b.inflight == {}
    assert b.due(NOW).dispatch == []
    b.upsert(evaluation("reg", idx=5), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["reg"]


def test_small_job_goes_ahead_of_large_ones_queued_before_it() -> None:
    b = EvalBroker()
    b.upsert(evaluation("big1", "j1", idx=1), NOW, cost=1000)
    b.upsert(evaluation("big2", "j2", idx=2), NOW, cost=1000)
    b.upsert(evaluation("small", "j3", idx=3), NOW + SECOND, cost=10)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["small", "big1", "big2"]


def test_a_large_job_is_passed_over_for_at_most_its_size_times_the_weight() -> None:
    b = EvalBroker()
    b.upsert(evaluation("big", "j1", idx=1), NOW, cost=1000)  # counts as arriving 50 s later
    b.upsert(evaluation("early-small", "j2", idx=2), NOW + 49 * SECOND, cost=10)
    b.upsert(evaluation("late-small", "j3", idx=3), NOW + 51 * SECOND, cost=10)
    assert [e.id for e in b.due(NOW + 51 * SECOND).dispatch] == ["early-small", "big", "late-small"]


def test_priority_still_comes_before_size() -> None:
    b = EvalBroker()
    b.upsert(evaluation("big-urgent", "j1", prio=90, idx=1), NOW, cost=5000)
    b.upsert(evaluation("small", "j2", idx=2), NOW, cost=1)
    assert [e.id for e in b.due(NOW).dispatch] == ["big-urgent", "small"]


def test_the_window_bounds_evals_out_at_once() -> None:
    b = EvalBroker(window=2)
    for i in range(4):
        b.upsert(evaluation(f"e{i}", f"j{i}", idx=i + 1), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["e0", "e1"]
    assert b.due(NOW).dispatch == []
    b.upsert(evaluation("e0", "j0", idx=1, status="complete"), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["e2"]
    # a blocked outcome frees the slot too
    b.upsert(evaluation("e1", "j1", idx=1, status="blocked"), NOW)
    assert [e.id for e in b.due(NOW).dispatch] == ["e3"]


def test_with_three_workers_two_large_evals_when_asked_keep_a_slot_for_small_ones() -> None:
    b = EvalBroker(window=3, large=2)
    for i in range(3):
        b.upsert(evaluation(f"big{i}", f"j{i}", idx=i + 1), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["big0", "big1"]  # big2 waits: slot kept
    b.upsert(evaluation("small", "js", idx=9), NOW + SECOND, cost=10)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["small"]
    b.upsert(evaluation("big0", "j0", idx=1, status="complete"), NOW + SECOND)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["big2"]


def test_with_two_workers_no_slot_is_kept() -> None:
    b = EvalBroker(window=2)
    for i in range(2):
        b.upsert(evaluation(f"big{i}", f"j{i}", idx=i + 1), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["big0", "big1"]


@pytest.mark.parametrize("large", [1, None])  # one is also the default with three workers
def test_large_evals_out_at_once_are_bounded_apart(large: int | None) -> None:
    b = EvalBroker(window=3, large=large)
    for i in range(3):
        b.upsert(evaluation(f"big{i}", f"j{i}", idx=i + 1), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["big0"]  # one large at a time
    for i in range(2):
        b.upsert(evaluation(f"small{i}", f"s{i}", idx=10 + i), NOW + SECOND, cost=10)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["small0", "small1"]
    b.upsert(evaluation("big0", "j0", idx=1, status="complete"), NOW + SECOND)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["big1"]
    # Never more than the window allows, and a slot is kept for small evals.
    assert EvalBroker(window=3, large=5).large_window == 2
    assert EvalBroker(window=2, large=1).large_window == 1
    assert EvalBroker(window=1, large=1).large_window == 1


def test_the_large_lanes_depth_is_used_only_while_no_small_eval_is_out() -> None:
    # Four slots, two large (one large-lane worker of depth 2), one large beside a small eval.
    b = EvalBroker(window=4, large=2, large_beside_small=1)
    for i in range(3):
        b.upsert(evaluation(f"big{i}", f"j{i}", idx=i + 1), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["big0", "big1"]  # no small job: the depth
    b.upsert(evaluation("small", "js", idx=9), NOW + SECOND, cost=10)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["small"]
    b.upsert(evaluation("big0", "j0", idx=1, status="complete"), NOW + SECOND)
    assert b.due(NOW + SECOND).dispatch == []  # one large is out, and so is a small one
    b.upsert(evaluation("small", "js", idx=9, status="complete"), NOW + SECOND)
    assert [e.id for e in b.due(NOW + SECOND).dispatch] == ["big2"]
    # unset, the limit is the same with small evals out or not
    assert EvalBroker(window=4, large=2).large_beside_small == 2


@pytest.mark.parametrize(
    ("quiet", "small_done_after", "extra_at", "held_until"),
    [
        # No quiet asked: the second large eval goes out as soon as the small one is done.
        (0, SECOND, SECOND, None),
        # A quiet of 2 s after the small eval finished at +1 s: held until +3 s, a wake-up then.
        (2 * SECOND, SECOND, 3 * SECOND, 3 * SECOND),
        # The small eval stayed out until +4 s: the quiet runs from then.
        (2 * SECOND, 4 * SECOND, 6 * SECOND, 6 * SECOND),
    ],
)
def test_the_large_lanes_depth_waits_for_a_quiet_after_small_evals(
    quiet: int, small_done_after: int, extra_at: int, held_until: int | None
) -> None:
    b = EvalBroker(window=4, large=2, large_beside_small=1, small_quiet=quiet)
    b.upsert(evaluation("small", "js", idx=1), NOW, cost=10)
    for i in range(3):
        b.upsert(evaluation(f"big{i}", f"j{i}", idx=i + 2), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["small", "big0"]  # one large beside a small
    b.upsert(evaluation("small", "js", idx=1, status="complete"), NOW + small_done_after)
    if extra_at > small_done_after:
        assert b.due(NOW + small_done_after).dispatch == []
        assert b.next_wakeup() == NOW + held_until if held_until is not None else b.next_wakeup() is None
        assert b.due(NOW + extra_at - 1).dispatch == []  # not a nanosecond early
    assert [e.id for e in b.due(NOW + extra_at).dispatch] == ["big1"]  # the whole depth
    assert b.next_wakeup() is None
    # Only the large lane's depth is waited for: the first large eval never is.
    b.upsert(evaluation("big0", "j0", idx=2, status="complete"), NOW + extra_at)
    b.upsert(evaluation("big1", "j1", idx=3, status="complete"), NOW + extra_at)
    b.upsert(evaluation("small2", "js2", idx=9), NOW + extra_at, cost=10)
    assert [e.id for e in b.due(NOW + extra_at).dispatch] == ["small2", "big2"]


def test_a_small_eval_arriving_in_the_quiet_starts_it_again() -> None:
    b = EvalBroker(window=4, large=2, large_beside_small=1, small_quiet=2 * SECOND)
    b.upsert(evaluation("s1", "js1", idx=1), NOW, cost=10)
    for i in range(2):
        b.upsert(evaluation(f"big{i}", f"j{i}", idx=i + 2), NOW, cost=1000)
    assert [e.id for e in b.due(NOW).dispatch] == ["s1", "big0"]
    b.upsert(evaluation("s1", "js1", idx=1, status="complete"), NOW + SECOND)
    b.upsert(evaluation("s2", "js2", idx=5), NOW + 2 * SECOND, cost=10)
    assert [e.id for e in b.due(NOW + 2 * SECOND).dispatch] == ["s2"]
    b.upsert(evaluation("s2", "js2", idx=5, status="complete"), NOW + 2 * SECOND + SECOND // 10)
    # The quiet after s1 would end at +3 s; s2 was out until +2.1 s, so it ends at +4.1 s.
    assert b.due(NOW + 3 * SECOND).dispatch == []
    assert b.next_wakeup() == NOW + 4 * SECOND + SECOND // 10
    assert [e.id for e in b.due(NOW + 4 * SECOND + SECOND // 10).dispatch] == ["big1"]


def _job(kind: str = "service", counts: tuple[int, ...] = (1,), stop: bool = False) -> Job:
    groups = [TaskGroup(name=f"g{i}", count=c) for i, c in enumerate(counts)]
    return Job(id="j", type=kind, task_groups=groups, stop=stop)


@pytest.mark.parametrize(
    ("job", "live", "nodes", "want"),
    [
        (None, 0, 10, 1),  # the job is gone: at least one
        (None, 7, 10, 7),  # gone, its live allocs to stop
        (_job(counts=(5,), stop=True), 3, 10, 3),  # stopped: its live allocs
        (_job(counts=(3, 2)), 0, 10, 5),  # every group's count
        (_job(counts=(5,)), 8, 10, 8),  # more live than asked: each is looked at
        (_job("batch", counts=(0,)), 0, 10, 1),
        (_job("system", counts=(1, 1)), 0, 10, 20),  # a placement per node and group
        (_job("sysbatch", counts=(1,)), 50, 10, 10),  # live allocs do not count
        (_job("system", counts=(1,)), 0, 0, 1),
    ],
)
def test_an_evals_cost_is_the_placements_its_job_asks_for(
    job: Job | None, live: int, nodes: int, want: int
) -> None:
    assert eval_cost(job, live, nodes) == want


@dataclass
class _Record:
    node_id: str
    stopped: bool

    def terminal_status(self) -> bool:
        return self.stopped


class _View:
    """The broker's replica after the event: nodes by ID, and what it keeps of each alloc."""

    nodes = {
        "ready": Node(id="ready", computed_class="c-ready"),
        "down": Node(id="down", status="down", computed_class="c-down"),
        "ineligible": Node(id="ineligible", scheduling_eligibility="ineligible", computed_class="c-in"),
        "draining": Node(id="draining", drain_strategy=DrainStrategy(), computed_class="c-dr"),
    }
    records = {
        "done": _Record("ready", True),
        "running": _Record("ready", False),
        "done-on-down": _Record("down", True),
        "done-on-gone": _Record("gone", True),
    }

    def node(self, node_id: str) -> Node | None:
        return self.nodes.get(node_id)

    def record(self, alloc_id: str) -> _Record | None:
        return self.records.get(alloc_id)


def _client(*ids: str) -> AllocsClientUpdated:
    return AllocsClientUpdated(updates=[AllocClientUpdate(id=i, client_status="complete") for i in ids])


@pytest.mark.parametrize(
    ("event", "want"),
    [
        # A node that is now usable: ready, eligible, not draining.
        (NodeRegistered(node=_View.nodes["ready"]), ["c-ready"]),
        (NodeRegistered(node=_View.nodes["down"]), []),
        (NodeStatusUpdated(node_id="ready", status="ready"), ["c-ready"]),
        (NodeStatusUpdated(node_id="down", status="down"), []),
        (NodeStatusUpdated(node_id="unknown", status="ready"), []),
        (NodeEligibilityUpdated(node_id="ready", eligibility="eligible"), ["c-ready"]),
        (NodeEligibilityUpdated(node_id="ineligible", eligibility="ineligible"), []),
        (NodeDrainUpdated(node_id="ready"), ["c-ready"]),  # drain done
        (NodeDrainUpdated(node_id="draining", drain_strategy=DrainStrategy()), []),
        (NodeDeregistered(node_id="ready"), []),
        # Allocs that stopped: their node's class, whatever the node's status.
        (_client("done", "running", "done-on-gone"), ["c-ready"]),
        (_client("done-on-down", "done"), ["c-down", "c-ready"]),
        (_client("unknown"), []),
        (
            PlanApplied(
                eval_id="e", stopped=[Allocation(id="done")], preempted=[Allocation(id="done-on-down")]
            ),
            ["c-ready", "c-down"],
        ),
        (PlanApplied(eval_id="e", allocs=[Allocation(id="done")]), []),  # placements free nothing
        (JobRegistered(job=_job()), []),
    ],
)
def test_which_classes_an_event_unblocks(event: Event, want: list[str]) -> None:
    assert list(unblocked_classes(_View(), event)) == want
