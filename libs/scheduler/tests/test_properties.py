"""Property tests of the schedulers and the plan applier on random clusters.

Random clusters (ready / down / initializing, ineligible and draining nodes, 1-3 datacenters,
racks, node classes, reserved resources) take several random service/batch jobs (1-3 groups,
counts 0-40, spreads, affinities, constraints, distinct_hosts / distinct_property) one after
another, then random follow-ups: scale up/down, destructive update, node down, node drain, node
added or back up, alloc failure (and its reschedule later), re-evaluation. After every eval:

(a) no node is over-committed, plans computed on the latest state commit fully, and two plans
    computed on the same snapshot never over-commit: the applier rejects the loser's nodes;
(b) alloc names are `<job>.<group>[<i>]` and unique per group among non-terminal allocs;
(c) convergence: a new eval on the state a committed plan produced changes nothing, and every
    group runs `count` allocs, when nothing failed to place;
(d) determinism: the same state and eval give the same plan, and scheduling mutates nothing;
(e) accounting: placed + queued == what the reconciler asked for, and FailedTGAllocs agrees.
Plus: placements respect datacenters, hard constraints, distinct_hosts and distinct_property;
and system jobs on random clusters (one alloc per feasible node, preemption rules).
The deterministic tests at the end are regressions the properties found.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from drover.model import (
    Affinity,
    Allocation,
    Constraint,
    DrainStrategy,
    DriverInfo,
    EphemeralDisk,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    Resources,
    Spread,
    SpreadTarget,
    Task,
    TaskGroup,
    TaskState,
)
from drover.model.alloc import ALLOC_CLIENT_FAILED
from drover.model.canonicalize import canonicalize
from drover.model.node import (
    NODE_ELIGIBLE,
    NODE_INELIGIBLE,
    NODE_STATUS_DOWN,
    NODE_STATUS_INIT,
    NODE_STATUS_READY,
    NodeReservedResources,
)
from drover.scheduler.harness import Harness
from drover.scheduler.plan import Plan, SchedulerResult
from drover.scheduler.planapply import apply_plan_result, evaluate_plan
from drover.scheduler.schedule import schedule
from drover.scheduler.state import InMemoryState

# Derandomized and without an example database, so CI is stable. Shrinking is off: on these
# multi-step scenarios it takes minutes; the failing draws are printed as they are.
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

RACKS = ("r1", "r2", "r3")
CPU = (50, 100, 100, 250, 250, 500, 1000, 2500)
MEM = (32, 64, 128, 128, 256, 512, 1024, 3000)
HEAVY_CPU = (250, 500, 700, 1000, 1500)
HEAVY_MEM = (256, 512, 700, 1024, 1500)
CLASSES = ("", "c1", "c2")

NOT_R1 = Constraint(ltarget="${meta.rack}", operand="!=", rtarget="r1")
NOT_C2 = Constraint(ltarget="${node.class}", operand="!=", rtarget="c2")
DC12 = Constraint(ltarget="${node.datacenter}", operand="regexp", rtarget="^dc[12]$")
NOT_R3 = Constraint(ltarget="${meta.rack}", operand="!=", rtarget="r3")
DISTINCT = Constraint(operand="distinct_hosts", rtarget="true")
RACK_AT_MOST_3 = Constraint(operand="distinct_property", ltarget="${meta.rack}", rtarget="3")

GROUP_CONSTRAINTS = (NOT_R1, NOT_C2, DC12, DISTINCT, RACK_AT_MOST_3)
JOB_CONSTRAINTS = (NOT_R3, DISTINCT, RACK_AT_MOST_3)

AFFINITIES = (
    Affinity(ltarget="${meta.rack}", operand="=", rtarget="r2", weight=50),
    Affinity(ltarget="${node.class}", operand="=", rtarget="c1", weight=-30),
    Affinity(ltarget="${node.datacenter}", operand="=", rtarget="dc1", weight=100),
)

SPREADS = (
    Spread(attribute="${node.datacenter}", weight=50),
    Spread(
        attribute="${node.datacenter}",
        weight=70,
        spread_target=[SpreadTarget(value="dc1", percent=70), SpreadTarget(value="dc2", percent=30)],
    ),
    Spread(attribute="${meta.rack}", weight=50, spread_target=[SpreadTarget(value="r1", percent=50)]),
    Spread(attribute="${meta.rack}", weight=30),
)


def mk_node(i: int, draw: Any, ndc: int) -> Node:
    status = draw(st.sampled_from([NODE_STATUS_READY] * 8 + [NODE_STATUS_DOWN, NODE_STATUS_INIT]))
    elig = draw(st.sampled_from([NODE_ELIGIBLE] * 7 + [NODE_INELIGIBLE]))
    drain = draw(st.integers(0, 9)) == 0
    reserved = draw(st.sampled_from([0, 0, 0, 100, 250]))
    return Node(
        id=f"node-{i:02d}",
        name=f"node-{i:02d}",
        datacenter=f"dc{draw(st.integers(1, ndc))}",
        node_class=draw(st.sampled_from(CLASSES)),
        attributes={"kernel.name": "linux", "unique.hostname": f"h{i}"},
        meta={"rack": draw(st.sampled_from(RACKS))},
        drivers={"mock": DriverInfo()},
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=draw(st.sampled_from([500, 1000, 2000, 4000, 8000]))),
            memory=NodeMemoryResources(memory_mb=draw(st.sampled_from([512, 1024, 2048, 4096, 8192]))),
            disk=NodeDiskResources(disk_mb=draw(st.sampled_from([1000, 5000, 20_000, 100_000]))),
        ),
        reserved_resources=NodeReservedResources(
            cpu=NodeCpuResources(cpu_shares=reserved), memory=NodeMemoryResources(memory_mb=reserved)
        ),
        status=status,
        scheduling_eligibility=elig,
        drain_strategy=DrainStrategy() if drain else None,
    )


@st.composite
def clusters(draw: Any, min_nodes: int = 1, max_nodes: int = 30) -> list[Node]:
    n = draw(st.integers(min_nodes, max_nodes))
    ndc = draw(st.integers(1, 3))
    return [mk_node(i, draw, ndc) for i in range(n)]


@st.composite
def jobs(draw: Any, job_id: str, max_count: int = 40, heavy: bool = False) -> Job:
    jtype = draw(st.sampled_from(["service", "batch"]))
    ngroups = draw(st.integers(1, 3))
    # Now and then one group asks for more than any node has.
    huge = not heavy and draw(st.integers(0, 9)) == 0
    huge_group = draw(st.integers(0, ngroups - 1))
    groups = []
    for gi in range(ngroups):
        tasks = [
            Task(
                name=f"t{ti}",
                driver="mock",
                resources=Resources(
                    cpu=draw(st.sampled_from(HEAVY_CPU if heavy else CPU)),
                    memory_mb=draw(st.sampled_from(HEAVY_MEM if heavy else MEM)),
                ),
            )
            for ti in range(draw(st.integers(1, 2)))
        ]
        if huge and gi == huge_group:
            tasks[0].resources = draw(
                st.sampled_from([Resources(cpu=9000, memory_mb=64), Resources(cpu=100, memory_mb=20_000)])
            )
        disk = draw(st.sampled_from([None, 0, 0, 50, 300, 2000]))
        groups.append(
            TaskGroup(
                name=f"g{gi}",
                count=draw(st.one_of(st.integers(0, 6), st.integers(0, max_count))),
                tasks=tasks,
                ephemeral_disk=EphemeralDisk(size_mb=disk) if disk is not None else None,
                constraints=draw(st.lists(st.sampled_from(GROUP_CONSTRAINTS), max_size=2, unique_by=str)),
                affinities=draw(st.lists(st.sampled_from(AFFINITIES), max_size=2, unique_by=str)),
                spreads=draw(st.lists(st.sampled_from(SPREADS), max_size=1)),
            )
        )
    job = Job(
        id=job_id,
        type=jtype,
        priority=draw(st.integers(20, 80)),
        datacenters=draw(st.sampled_from([["*"], ["*"], ["dc1"], ["dc1", "dc2"], ["dc*"]])),
        constraints=draw(st.lists(st.sampled_from(JOB_CONSTRAINTS), max_size=1)),
        spreads=draw(st.lists(st.sampled_from(SPREADS[:2]), max_size=1)),
        task_groups=groups,
    )
    return canonicalize(job)


FOLLOWUPS = st.tuples(
    st.sampled_from(["scale", "scale", "update", "down", "drain", "add", "up", "fail", "fail", "reeval"]),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 40),
)


# --------------------------------------------------------------------------------------------
# The world: a Harness plus bookkeeping and the checks
# --------------------------------------------------------------------------------------------


def plan_signature(plan: Plan) -> Any:
    def allocs(d: dict[str, list[Allocation]]) -> list[tuple[str, ...]]:
        return sorted(
            (a.id, a.node_id, a.name, a.desired_status, a.client_status, str(a.job_version))
            for lst in d.values()
            for a in lst
        )

    return (
        allocs(plan.node_allocation),
        allocs(plan.node_update),
        allocs(plan.node_preemptions),
        plan.deployment.id if plan.deployment is not None else None,
        sorted((u.deployment_id, u.status) for u in plan.deployment_updates),
    )


def state_fingerprint(state: InMemoryState) -> Any:
    return (
        state.index,
        sorted((a.id, a.model_dump_json()) for a in state.allocs.values()),
        sorted((d.id, d.model_dump_json()) for d in state.deployments.values()),
        sorted((k, j.model_dump_json()) for k, j in state.jobs.items()),
        sorted((n.id, n.model_dump_json()) for n in state.nodes.values()),
    )


def live_allocs(state: InMemoryState, job_id: str) -> list[Allocation]:
    return [a for a in state.allocs_by_job("default", job_id) if not a.terminal_status()]


def check_capacity(state: InMemoryState) -> None:
    """(a) no node is over-committed, and the state's incremental usage index agrees."""
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for a in state.allocs.values():
        if not a.terminal_status():
            u = used[a.node_id]
            u[0] += a.resources.cpu
            u[1] += a.resources.memory_mb
            u[2] += a.resources.disk_mb
    for node_id, u in used.items():
        node = state.node(node_id)
        assert node is not None, f"live alloc on unknown node {node_id}"
        cap = node.capacity()
        assert all(x <= c for x, c in zip(u, cap, strict=True)), f"{node_id} over-committed: {u} > {cap}"
        assert state.node_usage(node_id) == tuple(u)


def _constraint_ok(c: Constraint, node: Node) -> bool:
    if c == NOT_R1:
        return node.meta.get("rack") != "r1"
    if c == NOT_R3:
        return node.meta.get("rack") != "r3"
    if c == NOT_C2:
        return node.node_class != "c2"
    if c == DC12:
        return node.datacenter in ("dc1", "dc2")
    return True


def _rack(state: InMemoryState, a: Allocation) -> str:
    node = state.node(a.node_id)
    return node.meta.get("rack", "") if node is not None else ""


def _dc_ok(job: Job, node: Node) -> bool:
    return any(
        p == "*" or p == node.datacenter or (p == "dc*" and node.datacenter.startswith("dc"))
        for p in job.datacenters
    )


def check_job_invariants(state: InMemoryState, job: Job) -> None:
    """(b) names, plus datacenters, hard constraints and distinct_hosts of live allocs."""
    live = live_allocs(state, job.id)
    by_group: dict[str, list[Allocation]] = defaultdict(list)
    for a in live:
        by_group[a.task_group].append(a)
    if DISTINCT in job.constraints:
        per_node = Counter(a.node_id for a in live)
        assert max(per_node.values(), default=0) <= 1, f"job distinct_hosts violated: {per_node}"
    if RACK_AT_MOST_3 in job.constraints:
        per_rack = Counter(_rack(state, a) for a in live)
        assert max(per_rack.values(), default=0) <= 3, f"job distinct_property violated: {per_rack}"
    for tg in job.task_groups:
        allocs = by_group.get(tg.name, [])
        pat = re.compile(rf"^{re.escape(job.id)}\.{re.escape(tg.name)}\[(\d+)\]$")
        for a in allocs:
            assert pat.match(a.name), f"bad alloc name {a.name!r}"
        names = Counter(a.name for a in allocs)
        dups = {n: c for n, c in names.items() if c > 1}
        assert not dups, f"duplicate live names in {job.id}.{tg.name}: {dups}"
        if DISTINCT in tg.constraints:
            per_node = Counter(a.node_id for a in allocs)
            assert max(per_node.values(), default=0) <= 1, f"group distinct_hosts violated: {per_node}"
        if RACK_AT_MOST_3 in tg.constraints:
            per_rack = Counter(_rack(state, a) for a in allocs)
            assert max(per_rack.values(), default=0) <= 3, f"group distinct_property violated: {per_rack}"
        for a in allocs:
            node = state.node(a.node_id)
            if node is None:
                continue
            assert _dc_ok(job, node), f"{a.name} on {node.id} outside {job.datacenters}"
            for c in [*job.constraints, *tg.constraints]:
                assert _constraint_ok(c, node), f"{a.name} on {node.id} violates {c}"


def check_accounting(state: InMemoryState, job: Job, res: SchedulerResult) -> None:
    """(e) per group: new allocs placed + queued == place + destructive + migrate + canary asked."""
    placed: Counter[str] = Counter(a.task_group for a in res.plan.placements() if state.alloc(a.id) is None)
    queued = res.eval.queued_allocations
    for tg in job.task_groups:
        ann = res.plan.annotations.get(tg.name)
        asked = 0 if ann is None else ann.place + ann.destructive_update + ann.migrate + ann.canary
        q = queued.get(tg.name, 0)
        assert placed[tg.name] + q == asked, (
            f"{job.id}.{tg.name}: placed {placed[tg.name]} + queued {q} != asked {asked} ({ann})"
        )
        failed = res.eval.failed_tg_allocs.get(tg.name)
        if failed is None:
            assert q == 0, f"{tg.name}: {q} queued but no FailedTGAllocs"
        else:
            assert 1 + failed.coalesced_failures == q, f"{tg.name}: failures {failed} vs queued {q}"
    # Placements only on nodes that may take new allocs.
    for a in res.plan.placements():
        if state.alloc(a.id) is not None:
            continue
        node = state.node(a.node_id)
        assert node is not None and node.ready() and node.eligible() and not node.draining()
        assert _dc_ok(job, node)


@dataclass
class World:
    h: Harness = field(default_factory=Harness)
    jobs: dict[str, Job] = field(default_factory=dict)
    seq: int = 0
    node_seq: int = 100

    def eval_id(self) -> str:
        self.seq += 1
        return f"00000000-0000-4000-8000-{self.seq:012d}"

    def register(self, job: Job) -> Job:
        st_ = self.h.state
        st_.bump()
        old = st_.job(job.namespace, job.id)
        job = job.model_copy(
            update={
                "version": old.version + 1 if old is not None else 0,
                "create_index": old.create_index if old is not None else st_.index,
                "modify_index": st_.index,
                "job_modify_index": st_.index,
            }
        )
        st_.upsert_job(job)
        self.jobs[job.id] = job
        return job

    def process(self, job: Job, trigger: str, node_id: str = "") -> SchedulerResult:
        h = self.h
        evaluation = Evaluation(
            id=self.eval_id(),
            job_id=job.id,
            type=job.type,
            priority=job.priority,
            triggered_by=trigger,
            node_id=node_id,
            job_modify_index=job.job_modify_index,
        )
        before = state_fingerprint(h.state)
        first = schedule(h.state, evaluation, h.now)
        second = schedule(h.state, evaluation, h.now)
        # (d) scheduling reads, never writes; and is deterministic.
        assert state_fingerprint(h.state) == before, "the scheduler mutated the state it read"
        assert plan_signature(first.plan) == plan_signature(second.plan), "same state + eval, different plan"
        assert first.eval.queued_allocations == second.eval.queued_allocations
        check_accounting(h.state, job, first)

        n_results, n_plan_results = len(h.results), len(h.plan_results)
        res = h.process(evaluation)
        assert plan_signature(h.results[n_results].plan) == plan_signature(first.plan)
        # (a) a plan computed on the newest state must commit fully: the scheduler and the
        # applier agree on what fits.
        for pr in h.plan_results[n_plan_results:]:
            assert pr.rejected_nodes == [], (
                f"plan computed on the latest state was rejected: {pr.rejected_nodes}"
            )
        check_capacity(h.state)
        for j in self.jobs.values():
            check_job_invariants(h.state, j)

        # (c) convergence.
        transient = False
        if not res.eval.failed_tg_allocs:
            # Nothing failed to place: every group runs `count` allocs, except that a failed
            # alloc not (yet) replaced still counts (and scale-down leaves it alone, as Nomad).
            # One Nomad corner: allocs rescheduled in the same eval that scales the group down
            # are not weighed against the count (computeStop ignores rescheduleNow; only the
            # total placements are capped at count), so up to min(rescheduled, count) extra
            # allocs run until the next eval stops them.
            live = Counter(a.task_group for a in live_allocs(h.state, job.id))
            failed = Counter(
                a.task_group
                for a in h.state.allocs_by_job("default", job.id)
                if a.client_status == ALLOC_CLIENT_FAILED
                and not a.server_terminal()
                and not a.next_allocation
            )
            for tg in job.task_groups:
                ann = res.plan.annotations.get(tg.name)
                extra = min(ann.reschedule_now if ann is not None else 0, tg.count)
                assert live[tg.name] <= tg.count + extra and tg.count <= live[tg.name] + failed[tg.name], (
                    f"{job.id}.{tg.name}: count {tg.count}, live {live[tg.name]}, failed {failed[tg.name]}, "
                    f"rescheduled {extra}"
                )
                transient |= live[tg.name] > tg.count
        if not res.eval.failed_tg_allocs and not transient:
            again = schedule(
                h.state,
                Evaluation(id=self.eval_id(), job_id=job.id, type=job.type, priority=job.priority),
                h.now,
            )
            assert again.plan.node_allocation == {}, f"re-run placed/updated: {plan_signature(again.plan)[0]}"
            assert again.plan.node_update == {}, f"re-run stopped: {plan_signature(again.plan)[1]}"
            assert again.plan.node_preemptions == {}
            assert again.plan.is_noop(), "re-run changed deployments"
            for tg, ann in again.plan.annotations.items():
                assert ann.model_dump(exclude={"ignore"}) == type(ann)().model_dump(exclude={"ignore"}), (
                    tg,
                    ann,
                )
        return res

    def jobs_on_node(self, node_id: str) -> list[Job]:
        ids = sorted({a.job_id for a in self.h.state.allocs_by_node(node_id) if not a.terminal_status()})
        return [self.jobs[i] for i in ids if i in self.jobs]

    def followup(self, kind: str, a: int, b: int, count: int, draw_node: Any) -> None:
        h = self.h
        if kind == "scale" and self.jobs:
            job = self.jobs[sorted(self.jobs)[a % len(self.jobs)]]
            tgs = [tg.model_copy(deep=True) for tg in job.task_groups]
            tgs[b % len(tgs)].count = count
            job = self.register(job.model_copy(update={"task_groups": tgs}))
            self.process(job, "job-register")
        elif kind in ("down", "drain"):
            node = sorted(h.state.nodes.values(), key=lambda n: n.id)[a % len(h.state.nodes)]
            h.state.bump()
            if kind == "down":
                h.state.upsert_node(node.model_copy(update={"status": NODE_STATUS_DOWN}))
            else:
                h.state.upsert_node(node.model_copy(update={"drain_strategy": DrainStrategy()}))
                # The drainer marks the node's allocs for migration.
                for al in h.state.allocs_by_node(node.id):
                    if not al.terminal_status():
                        tr = al.desired_transition.model_copy(update={"migrate": True})
                        h.state.upsert_alloc(al.model_copy(update={"desired_transition": tr}))
            for job in self.jobs_on_node(node.id):
                self.process(job, "node-update" if kind == "down" else "node-drain", node_id=node.id)
        elif kind == "update" and self.jobs:
            # A destructive change (task resources): rolls with the update block, if any.
            job = self.jobs[sorted(self.jobs)[a % len(self.jobs)]]
            tgs = [tg.model_copy(deep=True) for tg in job.task_groups]
            t0 = tgs[b % len(tgs)].tasks[0]
            t0.resources = t0.resources.model_copy(update={"cpu": max(10, t0.resources.cpu + count - 20)})
            job = self.register(job.model_copy(update={"task_groups": tgs}))
            self.process(job, "job-register")
        elif kind in ("add", "up"):
            h.state.bump()
            down = sorted(n.id for n in h.state.nodes.values() if n.status != NODE_STATUS_READY)
            if kind == "up" and down:
                node = h.state.nodes[down[a % len(down)]]
                h.state.upsert_node(node.model_copy(update={"status": NODE_STATUS_READY}))
            else:
                self.node_seq += 1
                h.state.upsert_node(draw_node(self.node_seq))
            # Capacity appeared: every job's (blocked) eval runs again.
            for job in list(self.jobs.values()):
                self.process(job, "node-update")
        elif kind == "fail":
            live = sorted(
                (al for al in h.state.allocs.values() if not al.terminal_status() and al.job_id in self.jobs),
                key=lambda al: al.id,
            )
            if not live:
                return
            al = live[a % len(live)]
            h.state.bump()
            ts = TaskState(state="dead", failed=True, started_at=h.now - 1, finished_at=h.now)
            h.state.upsert_alloc(
                al.model_copy(update={"client_status": ALLOC_CLIENT_FAILED, "task_states": {"t0": ts}})
            )
            job = self.jobs[al.job_id]
            self.process(job, "alloc-failure")
            # Later, when the reschedule delay has passed, the follow-up eval runs.
            h.now += 2 * 3600 * 10**9
            self.process(job, "alloc-failure")
        elif kind == "reeval" and self.jobs:
            self.process(self.jobs[sorted(self.jobs)[a % len(self.jobs)]], "queued-allocs")


# --------------------------------------------------------------------------------------------
# The properties
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_random_clusters_and_jobs_keep_the_invariants(data: st.DataObject) -> None:
    nodes = data.draw(clusters(), label="nodes")
    ndc = len({n.datacenter for n in nodes})
    w = World()
    for n in nodes:
        w.h.state.upsert_node(n)
    njobs = data.draw(st.integers(1, 3), label="njobs")
    for i in range(njobs):
        job = w.register(data.draw(jobs(f"job{i}"), label=f"job{i}"))
        res = w.process(job, "job-register")
        if not res.eval.failed_tg_allocs:
            # Placed from scratch with nothing failed: names are exactly [0, count).
            for tg in job.task_groups:
                names = sorted(a.name for a in live_allocs(w.h.state, job.id) if a.task_group == tg.name)
                assert names == sorted(f"{job.id}.{tg.name}[{k}]" for k in range(tg.count))

    def new_node(i: int) -> Node:
        return mk_node(i, data.draw, ndc)

    for kind, a, b, count in data.draw(st.lists(FOLLOWUPS, max_size=5), label="followups"):
        w.followup(kind, a, b, count, new_node)


@SETTINGS
@given(data=st.data())
def test_plans_from_the_same_snapshot_never_overcommit(data: st.DataObject) -> None:
    """Two workers schedule two jobs on the same snapshot; the serial applier commits the first,
    then must reject exactly the second plan's nodes that no longer fit."""
    nodes = data.draw(clusters(min_nodes=1, max_nodes=5), label="nodes")
    h = Harness()
    for n in nodes:
        h.state.upsert_node(n)
    w = World(h=h)
    j1 = w.register(data.draw(jobs("race-a", max_count=12, heavy=True), label="job a"))
    j2 = w.register(data.draw(jobs("race-b", max_count=12, heavy=True), label="job b"))
    e1 = Evaluation(id=w.eval_id(), job_id=j1.id, type=j1.type, priority=j1.priority)
    e2 = Evaluation(id=w.eval_id(), job_id=j2.id, type=j2.type, priority=j2.priority)
    r1 = schedule(h.state, e1, h.now)
    r2 = schedule(h.state, e2, h.now)

    pr1 = evaluate_plan(h.state, r1.plan)
    assert pr1.rejected_nodes == []
    apply_plan_result(h.state, pr1, h.state.index + 1, h.now)
    check_capacity(h.state)

    expected_reject = sorted(n for n in r2.plan.node_allocation if not reference_fits(h.state, r2.plan, n))
    pr2 = evaluate_plan(h.state, r2.plan)
    assert sorted(pr2.rejected_nodes) == expected_reject
    assert (pr2.refresh_index > 0) == bool(expected_reject)
    apply_plan_result(h.state, pr2, h.state.index + 1, h.now)
    check_capacity(h.state)

    # The worker refreshes and retries: still nothing over-committed, and the retry commits.
    if pr2.rejected_nodes:
        r2b = schedule(h.state, e2, h.now)
        pr2b = evaluate_plan(h.state, r2b.plan)
        assert pr2b.rejected_nodes == []
        apply_plan_result(h.state, pr2b, h.state.index + 1, h.now)
        check_capacity(h.state)
    for j in (j1, j2):
        check_job_invariants(h.state, j)


def reference_fits(state: InMemoryState, plan: Plan, node_id: str) -> bool:
    """The applier's resource check, restated: existing live allocs, minus the plan's stops,
    preemptions and updates, plus its placements, within capacity."""
    node = state.node(node_id)
    if node is None:
        return False
    remove = {a.id for a in plan.node_update.get(node_id, [])}
    remove |= {a.id for a in plan.node_preemptions.get(node_id, [])}
    placing = plan.node_allocation.get(node_id, [])
    remove |= {a.id for a in placing}
    proposed = [a for a in state.allocs_by_node(node_id) if not a.terminal_status() and a.id not in remove]
    proposed += [a for a in placing if not a.terminal_status()]
    cpu = sum(a.resources.cpu for a in proposed)
    mem = sum(a.resources.memory_mb for a in proposed)
    disk = sum(a.resources.disk_mb for a in proposed)
    cap = node.capacity()
    return cpu <= cap[0] and mem <= cap[1] and disk <= cap[2]


def _simple_node(i: int, cpu: int = 1000, mem: int = 1000) -> Node:
    return Node(
        id=f"n{i}",
        name=f"n{i}",
        drivers={"mock": DriverInfo()},
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=cpu),
            memory=NodeMemoryResources(memory_mb=mem),
            disk=NodeDiskResources(disk_mb=10_000),
        ),
    )


def _simple_job(job_id: str, count: int, cpu: int, mem: int, jtype: str = "service") -> Job:
    return canonicalize(
        Job(
            id=job_id,
            type=jtype,
            task_groups=[
                TaskGroup(
                    name="g",
                    count=count,
                    tasks=[Task(name="t", driver="mock", resources=Resources(cpu=cpu, memory_mb=mem))],
                    ephemeral_disk=EphemeralDisk(size_mb=0),
                )
            ],
        )
    )


def test_racing_plans_deterministic_collision() -> None:
    """3 nodes, two jobs each wanting 60% of every node: the second plan is partially rejected
    rather than committed on top of the first."""
    w = World()
    for i in range(3):
        w.h.state.upsert_node(_simple_node(i))
    j1 = w.register(_simple_job("a", 3, 600, 600))
    j2 = w.register(_simple_job("b", 3, 600, 600))
    e1 = Evaluation(id=w.eval_id(), job_id="a", type="service")
    e2 = Evaluation(id=w.eval_id(), job_id="b", type="service")
    s = w.h.state
    r1, r2 = schedule(s, e1, w.h.now), schedule(s, e2, w.h.now)
    assert len(r1.plan.placements()) == 3 and len(r2.plan.placements()) == 3
    pr1 = evaluate_plan(s, r1.plan)
    apply_plan_result(s, pr1, s.index + 1, w.h.now)
    pr2 = evaluate_plan(s, r2.plan)
    assert sorted(pr2.rejected_nodes) == ["n0", "n1", "n2"]
    assert pr2.node_allocation == {}
    assert pr2.refresh_index == s.index
    apply_plan_result(s, pr2, s.index + 1, w.h.now)
    check_capacity(s)
    assert len(live_allocs(s, "b")) == 0
    # The retry on the refreshed state finds no room and queues all three.
    retry = schedule(s, e2, w.h.now)
    assert retry.plan.placements() == []
    assert retry.eval.queued_allocations == {"g": 3}
    assert j1.version == j2.version == 0


def test_harness_retries_after_partial_commit() -> None:
    """A plan that raced with another is partially committed; the harness re-runs the scheduler
    on the refreshed state and places what was rejected elsewhere."""
    w = World()
    for i in range(4):
        w.h.state.upsert_node(_simple_node(i))
    w.register(_simple_job("a", 2, 600, 600))
    j2 = w.register(_simple_job("b", 2, 600, 600))
    s = w.h.state
    r1 = schedule(s, Evaluation(id=w.eval_id(), job_id="a", type="service"), w.h.now)
    apply_plan_result(s, evaluate_plan(s, r1.plan), s.index + 1, w.h.now)
    taken = {a.node_id for a in live_allocs(s, "a")}
    # Job b's plan, computed as if job a were not there, targets job a's nodes.
    stale = InMemoryState()
    for n in s.nodes.values():
        stale.upsert_node(n)
    stale.upsert_job(j2)
    stale.bump(s.index)
    evaluation = Evaluation(id=w.eval_id(), job_id="b", type="service")
    r2 = schedule(stale, evaluation, w.h.now)
    pr2 = evaluate_plan(s, r2.plan)
    assert set(pr2.rejected_nodes) == taken & set(r2.plan.node_allocation)
    apply_plan_result(s, pr2, s.index + 1, w.h.now)
    check_capacity(s)
    retry = schedule(s, evaluation, w.h.now)
    pr = evaluate_plan(s, retry.plan)
    assert pr.rejected_nodes == []
    apply_plan_result(s, pr, s.index + 1, w.h.now)
    check_capacity(s)
    assert len(live_allocs(s, "b")) == 2
    assert sorted(a.name for a in live_allocs(s, "b")) == ["b.g[0]", "b.g[1]"]


@pytest.mark.parametrize(
    "constraint",
    [DISTINCT, Constraint(operand="distinct_property", ltarget="${meta.rack}", rtarget="1")],
    ids=["distinct_hosts", "distinct_property"],
)
def test_reschedule_replacement_respects_distinct_constraints(constraint: Constraint) -> None:
    """Found by the property test: the replacement of a failed alloc is placed next to a live
    alloc of the same job despite distinct_hosts / distinct_property (the failed alloc, already
    client-terminal, is "stopped" again in the group stack, so the node's counts drop to 0)."""
    w = World()
    w.h.state.upsert_node(_simple_node(0).model_copy(update={"meta": {"rack": "r1"}}))
    job = _simple_job("j", 2, 50, 32, jtype="batch").model_copy(update={"constraints": [constraint]})
    job = w.register(job)
    first = w.h.process(Evaluation(id=w.eval_id(), job_id="j", type="batch"))
    assert first.eval.queued_allocations == {"g": 1}  # one node: only one alloc may run there
    (a,) = live_allocs(w.h.state, "j")
    w.h.state.bump()
    ts = TaskState(state="dead", failed=True, started_at=w.h.now - 1, finished_at=w.h.now)
    w.h.state.upsert_alloc(
        a.model_copy(update={"client_status": ALLOC_CLIENT_FAILED, "task_states": {"t": ts}})
    )
    # The failed alloc no longer occupies the node: the queued alloc takes it.
    w.h.process(Evaluation(id=w.eval_id(), job_id="j", type="batch", triggered_by="alloc-failure"))
    assert [x.name for x in live_allocs(w.h.state, "j")] == ["j.g[1]"]
    # The reschedule delay passes: the replacement must not join j.g[1] on the only node.
    w.h.now += 60 * 10**9
    res = w.h.process(Evaluation(id=w.eval_id(), job_id="j", type="batch", triggered_by="alloc-failure"))
    assert len(live_allocs(w.h.state, "j")) == 1, [(x.name, x.node_id) for x in live_allocs(w.h.state, "j")]
    assert res.plan.placements() == []
    assert res.eval.queued_allocations == {"g": 1}


# --------------------------------------------------------------------------------------------
# System jobs on random clusters (preemption included)
# --------------------------------------------------------------------------------------------


@st.composite
def system_jobs(draw: Any, job_id: str) -> Job:
    groups = [
        TaskGroup(
            name=f"s{gi}",
            tasks=[
                Task(
                    name="t",
                    driver="mock",
                    resources=Resources(
                        cpu=draw(st.sampled_from(HEAVY_CPU)), memory_mb=draw(st.sampled_from(HEAVY_MEM))
                    ),
                )
            ],
            constraints=draw(st.lists(st.sampled_from((NOT_R1, NOT_C2)), max_size=1)),
            ephemeral_disk=EphemeralDisk(size_mb=0),
        )
        for gi in range(draw(st.integers(1, 2)))
    ]
    return canonicalize(
        Job(
            id=job_id,
            type=draw(st.sampled_from(["system", "sysbatch"])),
            priority=draw(st.integers(30, 100)),
            datacenters=draw(st.sampled_from([["*"], ["dc1"], ["dc1", "dc2"]])),
            task_groups=groups,
        )
    )


def _may_run(job: Job, tg: TaskGroup, n: Node) -> bool:
    return (
        n.ready()
        and n.eligible()
        and not n.draining()
        and _dc_ok(job, n)
        and all(_constraint_ok(c, n) for c in [*job.constraints, *tg.constraints])
    )


@SETTINGS
@given(data=st.data())
def test_system_jobs_keep_the_invariants(data: st.DataObject) -> None:
    """Service/batch jobs fill a random cluster, then a system job of random priority arrives:
    one alloc per feasible node and group, preemption only of jobs at least 10 lower (never its
    own), accounting, no over-commit, convergence."""
    nodes = data.draw(clusters(min_nodes=1, max_nodes=12), label="nodes")
    w = World()
    for n in nodes:
        w.h.state.upsert_node(n)
    for i in range(data.draw(st.integers(0, 2), label="n service jobs")):
        w.process(w.register(data.draw(jobs(f"svc{i}", max_count=15), label=f"svc{i}")), "job-register")
    sys_job = w.register(data.draw(system_jobs("sys"), label="system job"))
    h = w.h
    evaluation = Evaluation(id=w.eval_id(), job_id="sys", type=sys_job.type, priority=sys_job.priority)
    before = state_fingerprint(h.state)
    first = schedule(h.state, evaluation, h.now)
    assert plan_signature(first.plan) == plan_signature(schedule(h.state, evaluation, h.now).plan)
    assert state_fingerprint(h.state) == before
    for victims in first.plan.node_preemptions.values():
        for v in victims:
            vj = h.state.job("default", v.job_id)
            assert v.job_id != "sys"
            assert vj is not None and vj.priority <= sys_job.priority - 10, (
                vj and vj.priority,
                sys_job.priority,
            )
    # Accounting, against the cluster itself: every feasible node is either placed on or queued.
    placed = Counter(a.task_group for a in first.plan.placements() if h.state.alloc(a.id) is None)
    for tg in sys_job.task_groups:
        feasible = [n for n in h.state.nodes.values() if _may_run(sys_job, tg, n)]
        q = first.eval.queued_allocations.get(tg.name, 0)
        assert placed[tg.name] + q == len(feasible), (tg.name, placed[tg.name], q, len(feasible))
        failed = first.eval.failed_tg_allocs.get(tg.name)
        assert (failed is None and q == 0) or (failed is not None and 1 + failed.coalesced_failures == q)

    n_pr = len(h.plan_results)
    n_created = len(h.created_evals)
    res = h.process(evaluation)
    for pr in h.plan_results[n_pr:]:
        assert pr.rejected_nodes == []
    check_capacity(h.state)
    live = live_allocs(h.state, "sys")
    per = Counter((a.node_id, a.task_group) for a in live)
    assert max(per.values(), default=0) <= 1, per
    for a in live:
        node = h.state.node(a.node_id)
        assert node is not None and node.ready() and node.eligible() and not node.draining()
        assert _dc_ok(sys_job, node)
        tg = sys_job.lookup_task_group(a.task_group)
        assert tg is not None and all(_constraint_ok(c, node) for c in tg.constraints)
        assert a.name == f"sys.{a.task_group}[0]"
    # Every node that may run a group has its alloc, unless placement failed for that group.
    for tg in sys_job.task_groups:
        if tg.name in res.eval.failed_tg_allocs:
            continue
        want = {n.id for n in h.state.nodes.values() if _may_run(sys_job, tg, n)}
        assert {a.node_id for a in live if a.task_group == tg.name} == want
    pre_jobs = sorted({v.job_id for vs in res.plan.node_preemptions.values() for v in vs})
    # Made by the plan applier for what it committed (the harness plays it).
    pre_evals = sorted(e.job_id for e in h.created_evals[n_created:] if e.triggered_by == "preemption")
    assert pre_evals == pre_jobs
    if not res.eval.failed_tg_allocs:
        again = schedule(h.state, Evaluation(id=w.eval_id(), job_id="sys", type=sys_job.type), h.now)
        assert again.plan.is_noop(), plan_signature(again.plan)


@pytest.mark.parametrize("new_count", [0, 1])
def test_scale_down_caps_reschedule_placements_at_count(new_count: int) -> None:
    """Found by the property test: three failed allocs are due for rescheduling when the group is
    scaled down; Drover replaces all three. Nomad's computeGroup stops everything when the
    group is scaled to zero and never places more than the group's count."""
    w = World()
    for i in range(3):
        w.h.state.upsert_node(_simple_node(i))
    base = _simple_job("j", 3, 50, 32)  # a service job; no update block, so no deployment
    base = base.model_copy(
        update={
            "update": None,
            "task_groups": [tg.model_copy(update={"update": None}) for tg in base.task_groups],
        }
    )
    job = w.register(base)
    w.h.process(Evaluation(id=w.eval_id(), job_id="j", type="service"))
    assert len(live_allocs(w.h.state, "j")) == 3
    for a in live_allocs(w.h.state, "j"):
        w.h.state.bump()
        ts = TaskState(state="dead", failed=True, started_at=w.h.now - 1, finished_at=w.h.now)
        w.h.state.upsert_alloc(
            a.model_copy(update={"client_status": ALLOC_CLIENT_FAILED, "task_states": {"t": ts}})
        )
    w.h.now += 3600 * 10**9  # every reschedule delay has passed
    tgs = [tg.model_copy(update={"count": new_count}) for tg in job.task_groups]
    job = w.register(job.model_copy(update={"task_groups": tgs}))
    res = w.h.process(Evaluation(id=w.eval_id(), job_id="j", type="service", triggered_by="job-register"))
    assert len(res.plan.placements()) <= new_count
    assert len(live_allocs(w.h.state, "j")) == new_count
