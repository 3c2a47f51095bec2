"""Nomad's reconciler expectations, run through the whole core:
reconcile, place, verify and commit. Each row is count 10 unless said."""

from __future__ import annotations

from drover.model import Allocation, TaskState, UpdateStrategy
from drover.model.durations import SECOND
from drover.scheduler.harness import Harness
from drover.scheduler.plan import DesiredUpdates

from .conftest import make_eval, make_job, make_node


def cluster(h: Harness, n: int = 10) -> None:
    for i in range(n):
        h.state.upsert_node(make_node(f"n{i:02d}", dc=("dc1", "dc2")[i % 2]))


def live(h: Harness, job_id: str = "web") -> list[Allocation]:
    return [a for a in h.state.allocs_by_job("default", job_id) if not a.terminal_status()]


def register(h: Harness, count: int = 10, **kw: object) -> None:
    job = make_job(count=count, **kw)  # type: ignore[arg-type]
    h.state.upsert_job(job)
    h.process(make_eval(job))


def updates(h: Harness) -> DesiredUpdates:
    return h.results[-1].plan.annotations["g"]


def test_no_allocs_places_10(harness: Harness) -> None:
    cluster(harness)
    register(harness)
    assert updates(harness) == DesiredUpdates(place=10)
    assert sorted(a.name for a in live(harness)) == sorted(f"web.g[{i}]" for i in range(10))


def test_5_exist_places_5_ignores_5(harness: Harness) -> None:
    cluster(harness)
    register(harness, count=5)
    job = make_job(count=10)
    job.version = 0  # a count change keeps the same version in this test: pure scale
    harness.state.upsert_job(job)
    harness.process(make_eval(job, "job-scaling"))
    assert updates(harness) == DesiredUpdates(place=5, ignore=5)
    # New names take the free indexes 5..9.
    assert sorted(a.index() for a in live(harness)) == list(range(10))


def test_20_exist_stops_10_highest_first(harness: Harness) -> None:
    cluster(harness)
    register(harness, count=20)
    job = make_job(count=10)
    harness.state.upsert_job(job)
    harness.process(make_eval(job, "job-scaling"))
    assert updates(harness) == DesiredUpdates(stop=10, ignore=10)
    assert sorted(a.index() for a in live(harness)) == list(range(10))


def test_2_on_down_node_place_2_stop_2_lost(harness: Harness) -> None:
    cluster(harness, n=5)
    register(harness, cpu=1500)  # two per 4000 MHz node
    by_node: dict[str, list[Allocation]] = {}
    for a in live(harness):
        by_node.setdefault(a.node_id, []).append(a)
    down = next(n for n, allocs in by_node.items() if len(allocs) == 2)
    lost_ids = {a.id for a in by_node[down]}
    harness.state.upsert_node(harness.state.nodes[down].model_copy(update={"status": "down"}))
    harness.state.upsert_node(make_node("spare1"))
    harness.state.upsert_node(make_node("spare2"))
    job = harness.state.job("default", "web")
    assert job is not None
    harness.process(make_eval(job, "node-update", node_id=down))
    assert updates(harness) == DesiredUpdates(place=2, stop=2, ignore=8)
    stopped = {a.id: a for a in harness.state.allocs.values() if a.id in lost_ids}
    assert {a.client_status for a in stopped.values()} == {"lost"}
    assert {a.desired_status for a in stopped.values()} == {"stop"}
    replacements = [a for a in live(harness) if a.previous_allocation in lost_ids]
    assert len(replacements) == 2 and all(a.node_id != down for a in replacements)
    assert len(live(harness)) == 10


def test_2_on_draining_node_migrate_2(harness: Harness) -> None:
    cluster(harness, n=5)
    register(harness, cpu=1500)
    by_node: dict[str, list[Allocation]] = {}
    for a in live(harness):
        by_node.setdefault(a.node_id, []).append(a)
    drained = next(n for n, allocs in by_node.items() if len(allocs) == 2)
    from drover.model import DrainStrategy

    harness.state.upsert_node(
        harness.state.nodes[drained].model_copy(
            update={"drain_strategy": DrainStrategy(), "scheduling_eligibility": "ineligible"}
        )
    )
    harness.state.upsert_node(make_node("spare1"))
    for a in by_node[drained]:
        a2 = a.model_copy(
            update={"desired_transition": a.desired_transition.model_copy(update={"migrate": True})}
        )
        harness.state.upsert_alloc(a2)
    job = harness.state.job("default", "web")
    assert job is not None
    harness.process(make_eval(job, "node-drain", node_id=drained))
    assert updates(harness).migrate == 2
    assert updates(harness).ignore == 8
    assert all(a.node_id != drained for a in live(harness))
    assert len(live(harness)) == 10


def test_destructive_max_parallel_4(harness: Harness) -> None:
    cluster(harness)
    register(harness, update=UpdateStrategy(max_parallel=4))
    job = make_job(update=UpdateStrategy(max_parallel=4))
    job.task_groups[0].tasks[0].env = {"V": "2"}
    job.version = 1
    harness.state.upsert_job(job)
    harness.process(make_eval(job))
    assert updates(harness) == DesiredUpdates(destructive_update=4, ignore=6)
    dep = harness.state.latest_deployment("default", "web")
    assert dep is not None and dep.task_groups["g"].desired_total == 10
    assert sum(1 for a in live(harness) if a.job_version == 1) == 4


def test_canary_2(harness: Harness) -> None:
    cluster(harness)
    register(harness, update=UpdateStrategy(max_parallel=1, canary=2))
    job = make_job(update=UpdateStrategy(max_parallel=1, canary=2))
    job.task_groups[0].tasks[0].env = {"V": "2"}
    job.version = 1
    harness.state.upsert_job(job)
    harness.process(make_eval(job))
    assert updates(harness) == DesiredUpdates(canary=2, ignore=10)
    canaries = [a for a in live(harness) if a.deployment_status is not None and a.deployment_status.canary]
    assert len(canaries) == 2 and len(live(harness)) == 12


def test_failed_batch_alloc_with_future_delay_creates_one_followup(harness: Harness) -> None:
    cluster(harness)
    register(harness, count=1, job_type="batch")
    (alloc,) = live(harness)
    failed_at = harness.now
    harness.state.upsert_alloc(
        alloc.model_copy(
            update={
                "client_status": "failed",
                "task_states": {"t": TaskState(state="dead", failed=True, finished_at=failed_at)},
            }
        )
    )
    job = harness.state.job("default", "web")
    assert job is not None
    before = len(harness.created_evals)
    res = harness.process(make_eval(job, "alloc-failure"))
    assert res.plan.placements() == [] or all(a.id == alloc.id for a in res.plan.placements())
    assert updates(harness).place == 0 and updates(harness).reschedule_later == 1
    followups = harness.created_evals[before:]
    assert len(followups) == 1
    assert followups[0].triggered_by == "alloc-failure"
    # The batch default policy: a constant 5 s delay from the failure.
    assert followups[0].wait_until == failed_at + 5 * SECOND
    assert harness.state.allocs[alloc.id].followup_eval_id == followups[0].id


def test_completed_batch_alloc_is_never_replaced(harness: Harness) -> None:
    cluster(harness)
    register(harness, count=3, job_type="batch")
    for a in live(harness):
        harness.state.upsert_alloc(
            a.model_copy(update={"client_status": "complete", "task_states": {"t": TaskState(state="dead")}})
        )
    job = harness.state.job("default", "web")
    assert job is not None
    res = harness.process(make_eval(job, "alloc-stop"))
    assert res.plan.placements() == []
    assert updates(harness).place == 0


def test_stopped_job_stops_everything(harness: Harness) -> None:
    cluster(harness)
    register(harness)
    job = make_job()
    job.stop = True
    job.version = 1
    harness.state.upsert_job(job)
    harness.process(make_eval(job, "job-deregister"))
    assert updates(harness).stop == 10
    assert live(harness) == []


def test_does_not_fit_creates_blocked_eval_with_metrics(harness: Harness) -> None:
    cluster(harness, n=2)
    register(harness, count=5, cpu=3000)  # one per node fits
    res = harness.results[-1]
    assert len(res.plan.placements()) == 2
    assert res.eval.queued_allocations == {"g": 3}
    metric = res.eval.failed_tg_allocs["g"]
    assert metric.dimension_exhausted == {"cpu": 2}
    assert metric.nodes_exhausted == 2
    assert metric.coalesced_failures == 2
    assert res.blocked_eval is not None and res.blocked_eval.status == "blocked"
    assert res.blocked_eval.triggered_by == "queued-allocs"


def test_blocked_eval_is_reblocked_until_capacity_appears(harness: Harness) -> None:
    cluster(harness, n=2)
    register(harness, count=4, cpu=3000)
    blocked = harness.results[-1].blocked_eval
    assert blocked is not None
    # Processed again with no new capacity: it goes back to the blocked set, no new blocked eval.
    res = harness.process(blocked)
    assert res.reblock and res.eval.status == "blocked" and res.blocked_eval is None
    assert res.eval.class_eligibility  # which node classes it found ineligible or full
    # A node joins: the blocked eval places what it can, and stays blocked for the rest.
    harness.state.upsert_node(make_node("n-new"))
    res = harness.process(blocked)
    assert len(res.plan.placements()) == 1
    assert res.reblock and res.blocked_eval is None
    # Another: everything is placed and the blocked eval completes.
    harness.state.upsert_node(make_node("n-newer"))
    res = harness.process(blocked)
    assert len(res.plan.placements()) == 1
    assert not res.reblock and res.eval.status == "complete" and res.blocked_eval is None
