"""The plan applier's pure half: verify a plan against the newest state (partial commits), and
apply a committed result to an in-memory state.

The serial applier service calls `evaluate_plan` on its own up-to-date state; the guarantee that
no node is ever over-committed rests here.
"""

from __future__ import annotations

from drover.common import Allocation
from drover.common.alloc import ALLOC_CLIENT_LOST, ALLOC_CLIENT_UNKNOWN
from drover.common.node import NODE_ELIGIBLE
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
    existing = {a.id: a for a in state.allocs_by_node(node_id) if not a.terminal_status()}
    new = [a for a in placing if a.id not in existing]
    if new:
        if not node.ready():
            return False, "node is not ready for placements"
        if node.scheduling_eligibility != NODE_ELIGIBLE:
            return False, "node is not eligible"
    for a in plan.node_update.get(node_id, []):
        existing.pop(a.id, None)
    for a in plan.node_preemptions.get(node_id, []):
        existing.pop(a.id, None)
    for a in placing:
        existing.pop(a.id, None)
    cpu = mem = disk = 0
    for a in list(existing.values()) + [a for a in placing if not a.terminal_status()]:
        cpu += a.resources.cpu
        mem += a.resources.memory_mb
        disk += a.resources.disk_mb
    cap_cpu, cap_mem, cap_disk = node.capacity()
    if cpu > cap_cpu:
        return False, "cpu"
    if mem > cap_mem:
        return False, "memory"
    if disk > cap_disk:
        return False, "disk"
    return True, ""


def evaluate_plan(state: StateSnapshot, plan: Plan) -> PlanResult:
    """Commit what fits: every node is checked against `state`; rejected nodes are dropped
    (or, for an all-at-once job, the whole plan)."""
    result = PlanResult(deployment=plan.deployment, deployment_updates=list(plan.deployment_updates))
    nodes = set(plan.node_allocation) | set(plan.node_update) | set(plan.node_preemptions)
    for node_id in sorted(nodes):
        ok, _reason = node_fits(state, node_id, plan)
        if not ok:
            result.rejected_nodes.append(node_id)
            if plan.all_at_once:
                return PlanResult(rejected_nodes=sorted(nodes), refresh_index=state.index)
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


def apply_plan_result(state: InMemoryState, result: PlanResult, index: int, now: int) -> None:
    """Write a committed plan into `state` at `index` (what the event reducer does for the
    plan-applied event): placements, in-place updates, stops, preemptions, deployment."""
    state.bump(index)
    if result.deployment is not None:
        dep = result.deployment.model_copy(deep=True)
        old = state.deployment(dep.id)
        dep.create_index = old.create_index if old else index
        dep.modify_index = index
        state.upsert_deployment(dep)
    for upd in result.deployment_updates:
        target = state.deployment(upd.deployment_id)
        if target is not None:
            state.upsert_deployment(
                target.model_copy(
                    update={
                        "status": upd.status,
                        "status_description": upd.status_description,
                        "modify_index": index,
                    }
                )
            )
    for allocs in result.node_update.values():
        for a in allocs:
            _upsert(state, a, index, now)
    for allocs in result.node_preemptions.values():
        for a in allocs:
            _upsert(state, a, index, now)
    for allocs in result.node_allocation.values():
        for a in allocs:
            _upsert(state, a, index, now)
            if a.previous_allocation:
                prev = state.alloc(a.previous_allocation)
                if prev is not None and prev.next_allocation != a.id:
                    state.upsert_alloc(
                        prev.model_copy(update={"next_allocation": a.id, "modify_index": index})
                    )
            current = state.deployment(a.deployment_id) if a.deployment_id else None
            stored = state.alloc(a.id)
            # A new alloc of a deployment counts as placed for it.
            if (
                current is not None
                and stored is not None
                and stored.create_index == index
                and a.task_group in current.task_groups
            ):
                bumped = current.model_copy(deep=True)
                bumped.task_groups[a.task_group].placed_allocs += 1
                state.upsert_deployment(bumped)


def _upsert(state: InMemoryState, a: Allocation, index: int, now: int) -> None:
    old = state.alloc(a.id)
    update: dict[str, object] = {"modify_index": index, "modify_time": now}
    update["alloc_modify_index"] = index
    if old is None:
        update["create_index"] = index
    else:
        update["create_index"] = old.create_index
        update["task_states"] = old.task_states
        # The client owns its status and description; the server only sets lost and unknown.
        if a.client_status not in (ALLOC_CLIENT_LOST, ALLOC_CLIENT_UNKNOWN):
            update["client_status"] = old.client_status
            update["client_description"] = old.client_description
    state.upsert_alloc(a.model_copy(update=update))
