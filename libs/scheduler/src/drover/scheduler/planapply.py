"""The plan applier's pure half: verify a plan against the newest state (partial commits), the
preemption evals a committed result calls for, and apply a committed result to an in-memory
state.

The serial applier service calls `evaluate_plan` on its own up-to-date state; the guarantee that
no node is ever over-committed rests here. While a large plan that only adds allocs is being
committed, smaller plans of other jobs are verified against `PendingPlacements` (the state with
that plan's placements added) and may commit before it: see `adds_only`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import cast

from drover.model.alloc import Allocation
from drover.model.deployment import Deployment
from drover.model.evaluation import EVAL_STATUS_PENDING, TRIGGER_PREEMPTION, Evaluation
from drover.model.events import PlanApplied
from drover.model.job import Job
from drover.model.node import NODE_ELIGIBLE, Node
from drover.model.reducer import apply
from drover.model.schedulerconfig import SchedulerConfiguration
from drover.model.state import has_flat_usage, holds_ports
from drover.scheduler.netindex import NetworkIndex
from drover.scheduler.plan import Plan, PlanResult
from drover.scheduler.state import InMemoryState, StateSnapshot


def node_fits(state: StateSnapshot, node_id: str, plan: Plan) -> tuple[bool, str]:
    """Whether the node can take what the plan puts on it, after the plan's own stops and
    preemptions (Nomad's evaluateNodePlan)."""
    placing = plan.node_allocation.get(node_id, [])
    if not placing:
        return True, ""
    node = state.node(node_id)
    if node is None:
        return False, "node does not exist"

    def live_here(alloc_id: str) -> Allocation | None:
        cur = state.alloc(alloc_id)
        return cur if cur is not None and cur.node_id == node_id and not cur.terminal_status() else None

    # Start from the node's usage by its live allocs (kept by the state), take out every alloc
    # the plan stops, preempts or replaces in place, and add what it places: work in the size
    # of the plan, not of the node.
    cpu, mem, disk = state.node_usage(node_id)
    removed: set[str] = set()
    for a in (*plan.node_update.get(node_id, ()), *plan.node_preemptions.get(node_id, ()), *placing):
        cur = live_here(a.id) if a.id not in removed else None
        if cur is not None:
            removed.add(a.id)
            cpu -= cur.resources.cpu
            mem -= cur.resources.memory_mb
            disk -= cur.resources.disk_mb
    new = False
    for a in placing:
        if a.id not in removed:
            new = True
        if not a.terminal_status():
            cpu += a.resources.cpu
            mem += a.resources.memory_mb
            disk += a.resources.disk_mb
    if new:
        if not node.ready():
            return False, "node is not ready for placements"
        if node.scheduling_eligibility != NODE_ELIGIBLE:
            return False, "node is not eligible"
    cap_cpu, cap_mem, cap_disk = node.capacity()
    if cpu > cap_cpu:
        return False, "cpu"
    if mem > cap_mem:
        return False, "memory"
    if disk > cap_disk:
        return False, "disk"
    collision = port_collision(state, node, removed, placing)
    if collision:
        return False, collision
    return True, ""


def port_collision(state: StateSnapshot, node: Node, removed: set[str], placing: Iterable[Allocation]) -> str:
    """A host port the plan gives that another live alloc on the node holds, or that the node
    reserves, or that the plan gives twice: what two workers racing would otherwise commit.
    "" when there is none (or the plan gives no ports here)."""
    given = [a for a in placing if holds_ports(a) and not a.terminal_status()]
    if not given:
        return ""
    index = NetworkIndex(node)
    index.add_allocs(
        a for a in state.allocs_by_node(node.id) if a.id not in removed and not a.terminal_status()
    )
    for a in given:
        assert a.allocated_resources is not None
        for p in a.allocated_resources.shared.ports:
            if not p.ignore_collision and index.taken(p.host_ip, p.value):
                return f"network: port collision {p.label}={p.value}"
            index.offer([p])
    return ""


def plan_is_stale(state: StateSnapshot, plan: Plan) -> bool:
    """Whether a plan of the same job committed after this plan's snapshot (the server changes
    AllocModifyIndex only through plans)."""
    if plan.job is None or plan.snapshot_index <= 0:
        return False
    allocs = state.allocs_by_job(plan.job.namespace, plan.job.id)
    return any(a.alloc_modify_index > plan.snapshot_index for a in allocs)


def evaluate_plan(state: StateSnapshot, plan: Plan) -> PlanResult:
    """Commit what fits: every node is checked against `state`; rejected nodes are dropped
    (or, for an all-at-once job, the whole plan)."""
    result = PlanResult(
        eval_id=plan.eval_id,
        job_id=plan.job.id if plan.job is not None else "",
        namespace=plan.job.namespace if plan.job is not None else "default",
        deployment=plan.deployment,
        deployment_updates=list(plan.deployment_updates),
    )
    nodes = set(plan.node_allocation) | set(plan.node_update) | set(plan.node_preemptions)
    if plan.job is not None and plan_is_stale(state, plan):
        # Computed before another plan of the same job was committed: its reconciliation may
        # repeat what that one did (same names, same replacements). Refuse it whole; the worker
        # refreshes and schedules again.
        result.rejected_nodes = sorted(nodes)
        result.refresh_index = state.index
        result.stale = True
        result.deployment, result.deployment_updates = None, []
        return result
    for node_id in sorted(nodes):
        ok, _reason = node_fits(state, node_id, plan)
        if not ok:
            result.rejected_nodes.append(node_id)
            if plan.all_at_once:
                return PlanResult(
                    eval_id=plan.eval_id,
                    job_id=result.job_id,
                    namespace=result.namespace,
                    rejected_nodes=sorted(nodes),
                    refresh_index=state.index,
                )
            continue
        if node_id in plan.node_allocation:
            result.node_allocation[node_id] = plan.node_allocation[node_id]
        if node_id in plan.node_update:
            result.node_update[node_id] = plan.node_update[node_id]
        if node_id in plan.node_preemptions:
            # Only allocs still running can be preempted; one that finished meanwhile is left be.
            live = []
            for a in plan.node_preemptions[node_id]:
                cur = state.alloc(a.id)
                if cur is not None and not cur.terminal_status():
                    live.append(a)
            if live:
                result.node_preemptions[node_id] = live
    if result.rejected_nodes:
        result.refresh_index = state.index
    return result


def preemption_evals(
    state: StateSnapshot, result: PlanResult, now: int, new_id: Callable[[], str]
) -> list[Evaluation]:
    """One pending eval per job whose allocs the committed `result` preempts, so the job can
    place them again elsewhere (Nomad's plan applier creates these, not the scheduler: only
    preemptions that were committed count, partial commits included)."""
    jobs = sorted({(a.namespace, a.job_id) for allocs in result.node_preemptions.values() for a in allocs})
    out: list[Evaluation] = []
    for namespace, job_id in jobs:
        job = state.job(namespace, job_id)
        if job is None:
            continue
        out.append(
            Evaluation(
                id=new_id(),
                namespace=namespace,
                priority=job.priority,
                type=job.type,
                triggered_by=TRIGGER_PREEMPTION,
                job_id=job_id,
                status=EVAL_STATUS_PENDING,
                create_time=now,
                modify_time=now,
            )
        )
    return out


def plan_applied_event(result: PlanResult, now: int) -> PlanApplied:
    """The event that records a committed plan (what the applier appends to the log)."""
    return PlanApplied(
        eval_id=result.eval_id,
        job_id=result.job_id,
        namespace=result.namespace,
        allocs=[a for allocs in result.node_allocation.values() for a in allocs],
        stopped=[a for allocs in result.node_update.values() for a in allocs],
        preempted=[a for allocs in result.node_preemptions.values() for a in allocs],
        deployment=result.deployment,
        deployment_updates=[u.to_api() for u in result.deployment_updates],
        at=now,
    )


def apply_plan_result(state: InMemoryState, result: PlanResult, index: int, now: int) -> None:
    """Write a committed plan into `state` at `index`, through the event reducer."""
    apply(state, index, plan_applied_event(result, now))


def adds_only(state: StateSnapshot, result: PlanResult) -> bool:
    """Whether a verified result only adds load: new allocs placed, nothing stopped, preempted
    or updated in place. Such a plan may be overtaken: a plan verified against the state with
    its placements added (`PendingPlacements`) fits whether it commits before or after it,
    because every state in between holds a subset of what was verified - no index shows a node
    over-committed. (A plan that frees room is not: a plan counting on that room must commit
    after it.)"""
    if result.node_update or result.node_preemptions:
        return False
    return all(
        state.alloc(a.id) is None and not a.terminal_status()
        for allocs in result.node_allocation.values()
        for a in allocs
    )


class PendingPlacements:
    """`base` with the placements of an `adds_only` plan that is being committed: what a plan of
    another job is verified against meanwhile (the plan applier), or scheduled against (a
    worker, while its previous plan is being committed). Reads merge the pending allocs over the
    base as the base is at the time of the read; once the base has taken the plan in, its own
    copies count and the pending ones are ignored, so nothing counts twice. Only new allocs
    count: a pending in-place update or stop changes nothing here."""

    def __init__(self, base: StateSnapshot, result: PlanResult) -> None:
        self.base = base
        self.namespace = result.namespace
        self.job_id = result.job_id
        self._by_node = {n: list(v) for n, v in result.node_allocation.items() if v}
        self._allocs = {a.id: a for v in self._by_node.values() for a in v}

    @classmethod
    def of_plan(cls, base: StateSnapshot, plan: Plan) -> PendingPlacements:
        """`base` with a submitted plan's new placements, before its answer."""
        job = plan.job
        return cls(
            base,
            PlanResult(
                eval_id=plan.eval_id,
                namespace=job.namespace if job is not None else "default",
                job_id=job.id if job is not None else "",
                node_allocation=plan.node_allocation,
            ),
        )

    def _pending(self, allocs: Iterable[Allocation]) -> list[Allocation]:
        return [a for a in allocs if self.base.alloc(a.id) is None and not a.terminal_status()]

    # What the scheduler's node tables read when the base keeps usage in one flat array: the
    # base's node tables (node set unchanged) and its slots, over a copy of its usage with the
    # pending placements added.
    @property
    def flat_usage(self) -> bool:
        return has_flat_usage(self.base)

    @property
    def derived(self) -> dict[object, object] | None:
        return getattr(self.base, "derived", None)

    def usage_slots(self, node_ids: Iterable[str]) -> list[int]:
        return cast(InMemoryState, self.base).usage_slots(node_ids)

    def usage_buffer(self) -> array[int]:
        pending = [(n, p) for n, p in ((n, self._pending(v)) for n, v in self._by_node.items()) if p]
        # Slots first: finding one may add it to the base's array.
        slots = self.usage_slots(n for n, _ in pending)
        buf = array("q", cast(InMemoryState, self.base).usage_buffer())
        for (_, allocs), slot in zip(pending, slots, strict=True):
            i = 3 * slot
            for a in allocs:
                r = a.resources
                buf[i] += r.cpu
                buf[i + 1] += r.memory_mb
                buf[i + 2] += r.disk_mb
        return buf

    @property
    def index(self) -> int:
        return self.base.index

    def node(self, node_id: str) -> Node | None:
        return self.base.node(node_id)

    def all_nodes(self) -> Iterable[Node]:
        return self.base.all_nodes()

    def job(self, namespace: str, job_id: str) -> Job | None:
        return self.base.job(namespace, job_id)

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None:
        return self.base.job_version(namespace, job_id, version)

    def allocs_by_job(self, namespace: str, job_id: str) -> list[Allocation]:
        out = self.base.allocs_by_job(namespace, job_id)
        if (namespace, job_id) == (self.namespace, self.job_id):
            out = out + self._pending(self._allocs.values())
        return out

    def allocs_by_node(self, node_id: str) -> list[Allocation]:
        return self.base.allocs_by_node(node_id) + self._pending(self._by_node.get(node_id, ()))

    def alloc(self, alloc_id: str) -> Allocation | None:
        found = self.base.alloc(alloc_id)
        return found if found is not None else self._allocs.get(alloc_id)

    def port_nodes(self) -> dict[str, int] | set[str]:
        """The base's nodes where live allocs hold ports, and those the pending placements
        give ports on."""
        base = getattr(self.base, "port_nodes", None)
        found: set[str] = set(base()) if base is not None else set()
        for node_id, allocs in self._by_node.items():
            if any(holds_ports(a) for a in self._pending(allocs)):
                found.add(node_id)
        return found

    def node_usage(self, node_id: str) -> tuple[int, int, int]:
        cpu, mem, disk = self.base.node_usage(node_id)
        for a in self._pending(self._by_node.get(node_id, ())):
            r = a.resources
            cpu, mem, disk = cpu + r.cpu, mem + r.memory_mb, disk + r.disk_mb
        return cpu, mem, disk

    def latest_deployment(self, namespace: str, job_id: str) -> Deployment | None:
        return self.base.latest_deployment(namespace, job_id)

    def deployment(self, deployment_id: str) -> Deployment | None:
        return self.base.deployment(deployment_id)

    def config_for_pool(self, name: str) -> SchedulerConfiguration:
        return self.base.config_for_pool(name)
