"""Why a group's placement failed, as Nomad's AllocMetric tells it: what feasibility filtered,
which dimension ran out on which nodes and classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from drover.model import AllocMetric

if TYPE_CHECKING:
    from drover.scheduler.stack import GroupStack


def failure_metric(stack: GroupStack, nodes_available: dict[str, int], nodes_in_pool: int) -> AllocMetric:
    """Why a placement failed: what feasibility filtered and which dimension ran out."""
    t = stack.table
    feas = stack.feasible_set
    # Nomad's bin packing assigns ports first: a node whose ports collide is exhausted on
    # "network: <why>", whatever else it lacks.
    net_out, dims = stack.ports.exhausted(stack.feasible)
    f = stack.feasible & ~net_out
    cpu_out = f & (t.used_cpu + stack.ask_cpu > t.cap_cpu)
    mem_out = f & ~cpu_out & (t.used_mem + stack.ask_mem > t.cap_mem)
    disk_out = f & ~cpu_out & ~mem_out & (t.used_disk + stack.ask_disk > t.cap_disk)
    for name, arr in (("cpu", cpu_out), ("memory", mem_out), ("disk", disk_out)):
        c = int(arr.sum())
        if c:
            dims[name] = c
    exhausted_rows = np.flatnonzero(net_out | cpu_out | mem_out | disk_out)
    class_exhausted: dict[str, int] = {}
    for r in exhausted_rows:
        cls = t.nodes[int(r)].node_class
        class_exhausted[cls] = class_exhausted.get(cls, 0) + 1
    distinct_filtered = int((f & ~cpu_out & ~mem_out & ~disk_out & ~stack.fits()).sum())
    constraint_filtered = dict(feas.constraint_filtered)
    if distinct_filtered:
        key = "distinct constraints"
        constraint_filtered[key] = constraint_filtered.get(key, 0) + distinct_filtered
    return AllocMetric(
        nodes_evaluated=len(t),
        nodes_filtered=feas.nodes_filtered + distinct_filtered,
        nodes_in_pool=nodes_in_pool,
        nodes_available=dict(nodes_available),
        class_filtered=dict(feas.class_filtered),
        constraint_filtered=constraint_filtered,
        nodes_exhausted=int(exhausted_rows.size),
        class_exhausted=class_exhausted,
        dimension_exhausted=dims,
    )
