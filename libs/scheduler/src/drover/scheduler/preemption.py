"""Preemption: which live allocs of lower-priority jobs a placement may evict from a full node,
and on which node a generic (service or batch) placement does it. Whether a scheduler may
preempt at all is the scheduler configuration's PreemptionConfig, per job type (Nomad's
defaults: system jobs only).

As Nomad: only allocs of jobs at least PREEMPTION_PRIORITY_DELTA lower in priority, never the
placing job's own; the lowest-priority ones go first, the largest first within a priority,
until the ask fits. A generic placement preempts only once no node fits without it, on the
node whose victims are of the lowest priority (then the fewest), in the eval's random order."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from drover.model import Allocation, Job
from drover.model.alloc import ALLOC_DESIRED_EVICT
from drover.model.base import copy_with
from drover.model.defaults import DEFAULT_PRIORITY
from drover.scheduler.nodetable import NodeTable
from drover.scheduler.plan import DesiredUpdates, Plan
from drover.scheduler.stack import GroupStack, Selection
from drover.scheduler.state import StateSnapshot

PREEMPTION_PRIORITY_DELTA = 10
ALLOC_PREEMPTED = "Preempted by alloc ID {}"

Ask = tuple[float, float, float]


def choose_victims(
    allocs: Iterable[Allocation],
    job: Job,
    priority_of: Callable[[Allocation], int],
    free: Ask,
    ask: Ask,
) -> list[Allocation] | None:
    """The allocs of `allocs` (live, on one node) to evict so that `ask` fits in `free` plus what
    they free; None when even every candidate is not enough."""
    candidates = [
        a for a in allocs if a.job_id != job.id and priority_of(a) <= job.priority - PREEMPTION_PRIORITY_DELTA
    ]
    candidates.sort(key=lambda a: (priority_of(a), -a.resources.memory_mb, -a.resources.cpu, a.id))
    free_cpu, free_mem, free_disk = free
    cpu, mem, disk = ask
    chosen: list[Allocation] = []
    for a in candidates:
        if free_cpu >= cpu and free_mem >= mem and free_disk >= disk:
            break
        chosen.append(a)
        free_cpu += a.resources.cpu
        free_mem += a.resources.memory_mb
        free_disk += a.resources.disk_mb
    if not (free_cpu >= cpu and free_mem >= mem and free_disk >= disk):
        return None
    return chosen


def free_on(table: NodeTable, row: int) -> Ask:
    return (
        float(table.cap_cpu[row] - table.used_cpu[row]),
        float(table.cap_mem[row] - table.used_mem[row]),
        float(table.cap_disk[row] - table.used_disk[row]),
    )


def evictable(plan: Plan, live_on_node: Iterable[Allocation]) -> list[Allocation]:
    """The node's live allocs the plan does not stop or preempt already."""
    taken = {a.id for lst in plan.node_update.values() for a in lst}
    taken |= {a.id for lst in plan.node_preemptions.values() for a in lst}
    return [a for a in live_on_node if not a.terminal_status() and a.id not in taken]


def preempt(plan: Plan, table: NodeTable, victims: list[Allocation]) -> None:
    """Put the victims into the plan as preempted (evicted), their usage off the node table."""
    for a in victims:
        plan.append_preemption(a.model_copy(update={"desired_status": ALLOC_DESIRED_EVICT}))
        table.add_usage(a.node_id, a, -1)


def mark_preempted_by(plan: Plan, node_id: str, alloc_id: str) -> list[str]:
    """Name `alloc_id` as the preemptor of the node's preempted allocs not yet claimed; their IDs
    (the new alloc's PreemptedAllocations)."""
    ids = []
    for pre in plan.node_preemptions.get(node_id, []):
        if not pre.preempted_by_allocation:
            pre.preempted_by_allocation = alloc_id
            pre.desired_description = ALLOC_PREEMPTED.format(alloc_id)
            ids.append(pre.id)
    return ids


@dataclass
class Preemption:
    row: int
    victims: list[Allocation]


def best_preemption(
    rows: Iterable[int],
    table: NodeTable,
    job: Job,
    ask: Ask,
    live_on: Callable[[int], list[Allocation]],
    priority_of: Callable[[Allocation], int],
) -> Preemption | None:
    """Of `rows` (feasible nodes, in visiting order), the one where preempting evicts the
    lowest priorities (then the fewest allocs) for `ask` to fit; None if preempting makes room
    on none."""
    best: tuple[tuple[int, int], Preemption] | None = None
    for row in rows:
        victims = choose_victims(live_on(row), job, priority_of, free_on(table, row), ask)
        if not victims:
            continue  # it fits already (another stage refused it), or cannot be made to
        key = (max(priority_of(a) for a in victims), len(victims))
        if best is None or key < best[0]:
            best = (key, Preemption(row, victims))
    return best[1] if best is not None else None


def job_priority(state: StateSnapshot) -> Callable[[Allocation], int]:
    """The priority of an alloc's job, read from `state` (what preemption compares)."""

    def priority_of(alloc: Allocation) -> int:
        job = state.job(alloc.namespace, alloc.job_id)
        return job.priority if job is not None else DEFAULT_PRIORITY

    return priority_of


def preempt_for_group(plan: Plan, stack: GroupStack, state: StateSnapshot) -> Selection | None:
    """A node for one more alloc of the stack's group, made to fit by preemption (a generic
    scheduler's last resort, once no node fits without); None if preempting makes room on no
    node. A group asking for ports is placed without (their index is built from what stays)."""
    if stack.ports.active:
        return None
    table = stack.table
    rows = [int(r) for r in stack.order if stack.feasible[r]]
    ask = (stack.ask_cpu, stack.ask_mem, stack.ask_disk)
    found = best_preemption(
        rows,
        table,
        stack.job,
        ask,
        lambda row: evictable(plan, state.allocs_by_node(table.nodes[row].id)),
        job_priority(state),
    )
    if found is None:
        return None
    preempt(plan, table, found.victims)
    if not stack.fits()[found.row]:
        # Room enough, but another rule (distinct_hosts, distinct_property) refuses the node.
        undo(plan, table, found.victims)
        return None
    breakdown = stack.score(np.array([found.row], dtype=np.int64), set())
    return Selection(
        node=table.nodes[found.row],
        row=found.row,
        scores=breakdown.for_index(0),
        norm_score=float(breakdown.normalized()[0]),
        nodes_evaluated=len(rows),
    )


def claim_preempted(plan: Plan, alloc: Allocation) -> Allocation:
    """`alloc` (just placed) as the preemptor of what the plan preempted on its node for it,
    counted in its group's annotations."""
    if not plan.node_preemptions.get(alloc.node_id):
        return alloc
    preempted = mark_preempted_by(plan, alloc.node_id, alloc.id)
    if not preempted:
        return alloc
    plan.annotations.setdefault(alloc.task_group, DesiredUpdates()).preemptions += len(preempted)
    return copy_with(alloc, {"preempted_allocations": preempted})


def undo(plan: Plan, table: NodeTable, victims: list[Allocation]) -> None:
    """Take preempted allocs back out of the plan, their usage back on the node table."""
    ids = {a.id for a in victims}
    for a in victims:
        left = [p for p in plan.node_preemptions.get(a.node_id, []) if p.id not in ids]
        if left:
            plan.node_preemptions[a.node_id] = left
        else:
            plan.node_preemptions.pop(a.node_id, None)
        table.add_usage(a.node_id, a, 1)
