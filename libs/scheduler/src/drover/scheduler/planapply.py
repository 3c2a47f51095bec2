"""The plan applier's pure half: verify a plan against the newest state (partial commits), and
apply a committed result to an in-memory state.

The serial applier service calls `evaluate_plan` on its own up-to-date state; the guarantee that
no node is ever over-committed rests here.
"""

from __future__ import annotations

from drover.common.alloc import Allocation
from drover.common.events import PlanApplied
from drover.common.node import NODE_ELIGIBLE
from drover.common.reducer import apply
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
    return True, ""


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
