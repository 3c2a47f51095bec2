"""Ranking stages, table-driven against Nomad's ranking formulas (binpack, job anti-affinity,
node reschedule penalty, affinity, spread)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drover.model import Affinity, Allocation, AllocMetric
from drover.model.alloc import NodeScoreMeta
from drover.model.base import copy_with
from drover.scheduler.harness import Harness
from drover.scheduler.rank import (
    ScoreBreakdown,
    anti_affinity_scores,
    binpack_score,
    binpack_scores,
    limit_window,
    limit_window_array,
)

from .conftest import assert_built_valid, make_eval, make_job, make_node


def nomad_binpack(used_cpu: float, used_mem: float, cap_cpu: float, cap_mem: float) -> float:
    free_cpu = 1 - used_cpu / cap_cpu
    free_mem = 1 - used_mem / cap_mem
    return min(max(20 - (10**free_cpu + 10**free_mem), 0), 18) / 18


@pytest.mark.parametrize(
    ("used_cpu", "used_mem", "ask_cpu", "ask_mem", "cap_cpu", "cap_mem"),
    [
        (0, 0, 500, 256, 4000, 8192),
        (3500, 7936, 500, 256, 4000, 8192),  # exactly full -> 18/18
        (2000, 4096, 0, 0, 4000, 8192),  # half used
        (0, 0, 0, 0, 4000, 8192),  # empty -> 20 - 20 = 0
        (1000, 6000, 1000, 1000, 4000, 8192),
    ],
)
def test_binpack_matches_formula(
    used_cpu: float, used_mem: float, ask_cpu: float, ask_mem: float, cap_cpu: float, cap_mem: float
) -> None:
    got = binpack_scores(
        np.array([used_cpu]),
        np.array([used_mem]),
        np.array([1 / cap_cpu]),
        np.array([1 / cap_mem]),
        ask_cpu,
        ask_mem,
    )
    assert got[0] == pytest.approx(nomad_binpack(used_cpu + ask_cpu, used_mem + ask_mem, cap_cpu, cap_mem))

    one = binpack_score(used_cpu, used_mem, 1 / cap_cpu, 1 / cap_mem, ask_cpu, ask_mem)
    assert one == pytest.approx(got[0], abs=1e-12)


def test_binpack_prefers_fuller_nodes() -> None:
    got = binpack_scores(
        np.array([0.0, 2000.0]), np.array([0.0, 4000.0]), np.full(2, 1 / 4000), np.full(2, 1 / 8192), 500, 256
    )
    assert got[1] > got[0]


@pytest.mark.parametrize(
    ("collisions", "count", "expected"),
    [(0, 10, 0.0), (1, 10, -0.2), (2, 10, -0.3), (1, 2, -1.0), (4, 5, -1.0)],
)
def test_job_anti_affinity(collisions: int, count: int, expected: float) -> None:
    assert anti_affinity_scores(np.array([collisions]), count)[0] == pytest.approx(expected)


def test_normalization_is_mean_of_applied_stages() -> None:
    b = ScoreBreakdown(
        binpack=np.array([0.6, 0.6, 0.6]),
        anti_affinity=np.array([0.0, -0.2, -0.2]),
        penalty=np.array([0.0, 0.0, -1.0]),
        affinity=np.array([0.0, 0.0, 0.5]),
        spread=np.array([0.0, 0.0, 0.0]),
    )
    assert b.normalized() == pytest.approx([0.6, 0.2, (0.6 - 0.2 - 1.0 + 0.5) / 4])
    assert b.for_index(2) == {
        "binpack": 0.6,
        "job-anti-affinity": -0.2,
        "node-reschedule-penalty": -1.0,
        "node-affinity": 0.5,
    }


@pytest.mark.parametrize(
    ("scores", "limit", "exhausted", "expected"),
    [
        ([0.5, 0.4, 0.3], 2, False, [0, 1]),
        ([-0.5, 0.4, 0.3], 2, False, [1, 2]),  # a low scorer is held back
        ([-0.5, -0.4, -0.3, -0.2, 0.9], 2, False, [3, 4]),  # at most 3 held back
        ([-0.5, 0.4], 2, True, [1, 0]),  # source ran out: held ones come back
        ([0.0, 0.1, 0.2], 1, False, [1]),  # the threshold is inclusive
    ],
)
def test_limit_window(scores: list[float], limit: int, exhausted: bool, expected: list[int]) -> None:
    assert limit_window(scores, limit, exhausted) == expected
    assert limit_window_array(np.array(scores), limit, exhausted).tolist() == expected


def test_affinity_attracts_and_repels() -> None:
    h = Harness()
    for i in range(6):
        h.state.upsert_node(make_node(f"n{i}", meta={"tier": "gold" if i < 2 else "iron"}))
    job = make_job(count=4)
    job.task_groups[0].affinities = [
        Affinity(ltarget="${meta.tier}", rtarget="gold", operand="=", weight=100)
    ]
    h.state.upsert_job(job)
    res = h.process(make_eval(job))
    nodes = {a.node_id for a in res.plan.placements()}
    assert nodes <= {"n0", "n1"}
    scores = res.plan.placements()[0].metrics.score_meta_data[0].scores  # type: ignore[union-attr]
    assert scores["node-affinity"] == pytest.approx(1.0)

    h2 = Harness()
    for i in range(6):
        h2.state.upsert_node(make_node(f"n{i}", meta={"tier": "gold" if i < 2 else "iron"}))
    job2 = make_job(count=4)
    job2.task_groups[0].affinities = [
        Affinity(ltarget="${meta.tier}", rtarget="gold", operand="=", weight=-100)
    ]
    h2.state.upsert_job(job2)
    res2 = h2.process(make_eval(job2))
    assert not {a.node_id for a in res2.plan.placements()} & {"n0", "n1"}


def test_anti_affinity_spreads_a_service_over_empty_nodes() -> None:
    h = Harness()
    for i in range(5):
        h.state.upsert_node(make_node(f"n{i}"))
    job = make_job(count=5)
    h.state.upsert_job(job)
    res = h.process(make_eval(job))
    assert len({a.node_id for a in res.plan.placements()}) == 5


def test_limit_is_log2_of_nodes_for_service_and_2_for_batch() -> None:
    from drover.scheduler.generic import GenericScheduler

    h = Harness()
    for i in range(100):
        h.state.upsert_node(make_node(f"n{i:03d}"))
    for job_type, expected in (("service", math.ceil(math.log2(100))), ("batch", 2)):
        job = make_job(job_id=f"j-{job_type}", job_type=job_type, count=1)
        h.state.upsert_job(job)
        sched = GenericScheduler(h.state, make_eval(job), h.now)
        assert sched._stack(job.task_groups[0]).limit == expected


def test_reschedule_penalty_avoids_previous_nodes() -> None:
    from drover.model import TaskState

    h = Harness()
    for i in range(3):
        h.state.upsert_node(make_node(f"n{i}"))
    job = make_job(count=1)
    job.task_groups[0].reschedule_policy = job.task_groups[0].reschedule_policy.model_copy(  # type: ignore[union-attr]
        update={"delay": 5_000_000_000, "delay_function": "constant"}
    )
    h.state.upsert_job(job)
    h.process(make_eval(job))
    # Rescheduling waits for the job's first deployment to end (as Nomad's); let it succeed.
    dep = h.state.latest_deployment("default", job.id)
    assert dep is not None
    h.state.upsert_deployment(dep.model_copy(update={"status": "successful"}))
    seen: set[str] = set()
    for _ in range(2):
        (alloc,) = [a for a in h.state.allocs.values() if not a.terminal_status()]
        seen.add(alloc.node_id)
        h.now += 60_000_000_000
        h.state.upsert_alloc(
            alloc.model_copy(
                update={
                    "client_status": "failed",
                    "task_states": {
                        "t": TaskState(state="dead", failed=True, finished_at=h.now - 10_000_000_000)
                    },
                }
            )
        )
        h.process(make_eval(job, "alloc-failure"))
    (alloc,) = [a for a in h.state.allocs.values() if not a.terminal_status()]
    # Every node of the chain so far is penalized: the third alloc lands on the third node.
    assert alloc.node_id not in seen


@pytest.mark.parametrize("distinct_hosts", [False, True])
def test_rows_refreshed_one_by_one_match_a_full_refresh(distinct_hosts: bool) -> None:
    """After every placement the group stack refreshes the changed row alone; its caches must
    equal what recomputing every row gives."""
    from drover.model import Constraint
    from drover.scheduler.generic import GenericScheduler

    h = Harness()
    for i in range(40):
        h.state.upsert_node(make_node(f"n{i:03d}", cpu=2000 + 100 * i, mem=4096))
    job = make_job(count=30, cpu=300, mem=200)
    if distinct_hosts:
        job.task_groups[0].constraints.append(Constraint(operand="distinct_hosts"))
    h.state.upsert_job(job)
    sched = GenericScheduler(h.state, make_eval(job), h.now)
    sched.process()
    stack = sched._stack(job.task_groups[0])
    stack.fits()
    fits, binpack, anti = stack._fits.copy(), stack._binpack.copy(), stack._anti.copy()
    assert len(sched.plan.placements()) == 30 and stack.table.changes
    stack._seen = -1  # force the vector path over every row
    stack.fits()
    assert (stack._fits == fits).all()
    assert np.allclose(stack._binpack, binpack, rtol=0, atol=1e-12)
    assert (stack._anti == anti).all()


def test_the_placement_check_catches_a_member_of_the_wrong_type() -> None:
    """The check every Harness test runs on the scheduler's unvalidated placements
    (conftest.assert_built_valid) fails on a member that is not of its field's type."""
    good = copy_with(NodeScoreMeta(), {"node_id": "n1", "scores": {"binpack": 0.5}, "norm_score": 0.5})
    assert_built_valid(copy_with(Allocation(), {"metrics": AllocMetric(score_meta_data=[good])}))
    bad = copy_with(
        NodeScoreMeta(), {"node_id": "n1", "scores": {"binpack": 0.5}, "norm_score": np.float64(0.5)}
    )
    with pytest.raises(AssertionError):
        assert_built_valid(copy_with(Allocation(), {"metrics": AllocMetric(score_meta_data=[bad])}))
