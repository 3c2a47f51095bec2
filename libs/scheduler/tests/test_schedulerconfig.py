"""The scheduler configuration honoured by the scheduling core: the fit algorithm (binpack or
spread, Nomad's ScoreFitBinPack / ScoreFitSpread), a node pool's override, the node limit of
spread and affinity placements, memory_max given only with memory oversubscription, preemption
per job type, and the eval broker paused."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from drover.model import Affinity, Evaluation, Job, Resources, Task, TaskGroup
from drover.model.alloc import ALLOC_CLIENT_RUNNING, ALLOC_DESIRED_EVICT, Allocation
from drover.model.canonicalize import canonicalize
from drover.model.evaluation import TRIGGER_PREEMPTION
from drover.model.nodepool import NodePool, NodePoolSchedulerConfiguration
from drover.model.schedulerconfig import (
    DEFAULT_SCHEDULER_CONFIGURATION,
    PreemptionConfig,
    SchedulerConfiguration,
)
from drover.scheduler.broker import EvalBroker
from drover.scheduler.harness import Harness
from drover.scheduler.rank import binpack_score, spread_fit_score, spread_fit_scores

from .conftest import make_eval, make_job, make_node

NOW = 1_700_000_000_000_000_000


def _cluster(config: SchedulerConfiguration, nodes: int = 10, pool: str = "default") -> Harness:
    h = Harness()
    h.state.set_scheduler_config(config)
    for i in range(nodes):
        h.state.upsert_node(make_node(f"n{i:02d}", node_pool=pool))
    return h


def _register(h: Harness, job: Job) -> Job:
    h.state.bump()
    job = job.model_copy(update={"create_index": h.state.index, "modify_index": h.state.index})
    h.state.upsert_job(job)
    return job


def _run(h: Harness, job: Job) -> None:
    h.process(make_eval(_register(h, job)))


def _per_node(h: Harness) -> list[int]:
    """Live allocs on each node that holds any, fullest first."""
    counts = Counter(a.node_id for a in h.state.allocs.values() if not a.terminal_status())
    return sorted(counts.values(), reverse=True)


SPREAD = SchedulerConfiguration(scheduler_algorithm="spread")
BINPACK = SchedulerConfiguration(scheduler_algorithm="binpack")


# --- the fit scores: Nomad's formulas (nomad/structs/funcs.go) ---
@pytest.mark.parametrize(
    ("used", "ask", "binpack", "spread"),
    [
        # free after placing: 1 - (used + ask) / capacity, CPU and memory alike here
        (0.0, 0.25, (20 - 2 * 10**0.75) / 18, (2 * 10**0.75 - 2) / 18),
        (0.5, 0.25, (20 - 2 * 10**0.25) / 18, (2 * 10**0.25 - 2) / 18),
        (0.75, 0.25, 1.0, 0.0),  # a perfect fit: binpack's best, spread's worst
        (0.0, 0.0, 0.0, 1.0),  # an empty node: 20 - 20 = 0; 20 - 2 = 18, the most
    ],
)
def test_the_fit_scores_are_nomad_s(used: float, ask: float, binpack: float, spread: float) -> None:
    cap = 1000.0
    args = (used * cap, used * cap, 1 / cap, 1 / cap, ask * cap, ask * cap)
    assert binpack_score(*args) == pytest.approx(binpack)
    assert spread_fit_score(*args) == pytest.approx(spread)
    vector = spread_fit_scores(*(np.array([a]) for a in args[:4]), *args[4:])
    assert vector[0] == pytest.approx(spread)


def test_spread_scores_emptier_nodes_higher_and_binpack_fuller() -> None:
    cap = 4000.0
    used = np.array([0.0, 1000.0, 2000.0, 3000.0])
    inv = np.full(4, 1 / cap)
    spread = spread_fit_scores(used, used, inv, inv, 500.0, 500.0)
    assert list(np.argsort(-spread)) == [0, 1, 2, 3]
    binpack = [binpack_score(u, u, 1 / cap, 1 / cap, 500.0, 500.0) for u in used]
    assert sorted(binpack) == binpack and binpack[0] < binpack[-1]


# --- the algorithm in placements ---
def test_spread_places_a_count_10_job_one_per_node() -> None:
    h = _cluster(SPREAD)
    _run(h, make_job("web", count=10, cpu=1000, mem=2048, datacenters=["dc1"]))
    assert _per_node(h) == [1] * 10


def test_binpack_also_spreads_one_job_s_allocs_by_job_anti_affinity() -> None:
    """As Nomad: binpack packs jobs together, but a job's own allocs repel each other (job
    anti-affinity, -(collisions+1)/count): on empty nodes a count-10 job lands one per node."""
    h = _cluster(BINPACK)
    _run(h, make_job("web", count=10, cpu=1000, mem=2048, datacenters=["dc1"]))
    assert _per_node(h) == [1] * 10


# An affinity every node meets changes no ranking but has every node scored (the limit
# becomes the node limit), so binpack's choice is the fullest fitting node, not a window's.
_EVERYWHERE = [Affinity(ltarget="${node.datacenter}", rtarget="dc1", operand="=", weight=50)]


def _single(i: int) -> Job:
    return make_job(f"single-{i}", count=1, cpu=1000, mem=2048, datacenters=["dc1"], affinities=_EVERYWHERE)


def test_binpack_puts_jobs_on_as_few_nodes_as_fit() -> None:
    h = _cluster(BINPACK)
    for i in range(10):
        _run(h, _single(i))
    # Four allocs of a quarter node fill one: ten fit on three.
    assert _per_node(h) == [4, 4, 2]


def test_spread_puts_jobs_one_per_node() -> None:
    h = _cluster(SPREAD)
    for i in range(10):
        _run(h, _single(i))
    assert _per_node(h) == [1] * 10


def test_a_pool_s_algorithm_overrides_the_cluster_s() -> None:
    h = _cluster(BINPACK, pool="edge")
    h.state.upsert_node_pool(
        NodePool(
            name="edge", scheduler_configuration=NodePoolSchedulerConfiguration(scheduler_algorithm="spread")
        )
    )
    for i in range(10):
        _run(h, _single(i).model_copy(update={"node_pool": "edge"}))
    assert _per_node(h) == [1] * 10
    assert h.state.config_for_pool("edge").scheduler_algorithm == "spread"
    assert h.state.config_for_pool("default").scheduler_algorithm == "binpack"


def test_the_node_limit_is_the_configured_one() -> None:
    """With a node limit of 2, a spread job scores a window of two nodes: it no longer finds the
    emptiest of ten every time."""
    h = _cluster(SchedulerConfiguration(scheduler_algorithm="binpack", node_limit_for_feasibility_checks=2))
    for i in range(10):
        _run(h, _single(i))
    assert len(_per_node(h)) > 3


# --- memory oversubscription ---
def _memory_max_job(pool: str = "default") -> Job:
    tg = TaskGroup(
        name="g",
        count=1,
        tasks=[
            Task(name="t", driver="mock", resources=Resources(cpu=100, memory_mb=256, memory_max_mb=1024))
        ],
    )
    return canonicalize(Job(id="mem", datacenters=["dc1"], node_pool=pool, task_groups=[tg]))


def _given_memory_max(h: Harness) -> int:
    (alloc,) = [a for a in h.state.allocs.values() if a.job_id == "mem"]
    assert alloc.allocated_resources is not None
    return alloc.allocated_resources.tasks["t"].memory.memory_max_mb


@pytest.mark.parametrize(
    ("cluster", "pool", "given"),
    [
        (False, None, 0),  # memory_max ignored: the task is limited to its memory
        (True, None, 1024),
        (False, True, 1024),  # the pool allows it where the cluster does not
        (True, False, 0),  # and the other way round
    ],
)
def test_memory_max_is_given_only_with_oversubscription(cluster: bool, pool: bool | None, given: int) -> None:
    h = _cluster(SchedulerConfiguration(memory_oversubscription_enabled=cluster), nodes=2, pool="mem")
    h.state.upsert_node_pool(
        NodePool(
            name="mem",
            scheduler_configuration=NodePoolSchedulerConfiguration(memory_oversubscription_enabled=pool),
        )
    )
    _run(h, _memory_max_job("mem"))
    assert _given_memory_max(h) == given


# --- preemption per job type ---
def _full_node_with_low_priority_alloc(config: SchedulerConfiguration) -> tuple[Harness, Allocation]:
    h = _cluster(config, nodes=1)
    low = _register(
        h,
        make_job("low", count=1, cpu=4000, mem=8192, datacenters=["dc1"]).model_copy(update={"priority": 20}),
    )
    h.state.bump()
    victim = Allocation(
        id="low-alloc", name="low.g[0]", job_id="low", task_group="g", node_id="n00",
        resources=Resources(cpu=4000, memory_mb=8192), client_status=ALLOC_CLIENT_RUNNING,
        create_index=h.state.index, modify_index=h.state.index, job_version=low.version,
    )  # fmt: skip
    h.state.upsert_alloc(victim)
    return h, victim


@pytest.mark.parametrize("job_type", ["service", "batch"])
@pytest.mark.parametrize("enabled", [True, False])
def test_a_generic_job_preempts_only_where_its_type_may(job_type: str, enabled: bool) -> None:
    preemption = PreemptionConfig(
        service_scheduler_enabled=enabled and job_type == "service",
        batch_scheduler_enabled=enabled and job_type == "batch",
    )
    h, victim = _full_node_with_low_priority_alloc(SchedulerConfiguration(preemption_config=preemption))
    high = make_job("high", count=1, cpu=2000, mem=2048, job_type=job_type, datacenters=["dc1"])
    _run(h, high.model_copy(update={"priority": 80}))
    placed = [a for a in h.state.allocs.values() if a.job_id == "high" and not a.terminal_status()]
    evicted = h.state.alloc(victim.id)
    assert evicted is not None
    if enabled:
        assert len(placed) == 1 and placed[0].preempted_allocations == [victim.id]
        assert evicted.desired_status == ALLOC_DESIRED_EVICT
        assert evicted.preempted_by_allocation == placed[0].id
        assert [e.job_id for e in h.created_evals if e.triggered_by == TRIGGER_PREEMPTION] == ["low"]
        assert h.results[0].plan.annotations["g"].preemptions == 1
    else:
        assert placed == [] and not evicted.terminal_status()
        assert "g" in h.results[0].eval.failed_tg_allocs


def test_a_generic_job_never_preempts_a_job_less_than_10_priority_below() -> None:
    config = SchedulerConfiguration(preemption_config=PreemptionConfig(service_scheduler_enabled=True))
    h, victim = _full_node_with_low_priority_alloc(config)
    _run(
        h,
        make_job("high", count=1, cpu=2000, mem=2048, datacenters=["dc1"]).model_copy(
            update={"priority": 29}
        ),
    )
    current = h.state.alloc(victim.id)
    assert current is not None and not current.terminal_status()


def _system_job(job_type: str) -> Job:
    tg = TaskGroup(
        name="g", tasks=[Task(name="t", driver="mock", resources=Resources(cpu=2000, memory_mb=2048))]
    )
    return canonicalize(Job(id="sys", type=job_type, priority=80, datacenters=["dc1"], task_groups=[tg]))


@pytest.mark.parametrize(
    ("job_type", "config", "preempts"),
    [
        # Nomad's default: system jobs preempt, sysbatch ones do not.
        ("system", DEFAULT_SCHEDULER_CONFIGURATION, True),
        ("sysbatch", DEFAULT_SCHEDULER_CONFIGURATION, False),
        ("system", SchedulerConfiguration(), False),
        (
            "sysbatch",
            SchedulerConfiguration(preemption_config=PreemptionConfig(sys_batch_scheduler_enabled=True)),
            True,
        ),
    ],
)
def test_a_system_job_preempts_as_its_type_is_configured(
    job_type: str, config: SchedulerConfiguration, preempts: bool
) -> None:
    h, victim = _full_node_with_low_priority_alloc(config)
    job = _register(h, _system_job(job_type))
    h.process(
        Evaluation(id="sys-eval", job_id=job.id, type=job_type, priority=80, triggered_by="job-register")
    )
    current = h.state.alloc(victim.id)
    assert current is not None and current.terminal_status() == preempts


# --- the broker paused ---
def test_a_paused_broker_hands_out_nothing_until_unpaused() -> None:
    broker = EvalBroker()
    job = make_job("web")
    evals = [make_eval(job, create_index=1), make_eval(make_job("api"), create_index=2)]
    broker.paused = True
    for e in evals:
        broker.upsert(e, NOW)
    assert broker.due(NOW).dispatch == [] and broker.due(NOW + 10**12).dispatch == []
    broker.paused = False
    assert sorted(e.id for e in broker.due(NOW + 10**12).dispatch) == sorted(e.id for e in evals)
