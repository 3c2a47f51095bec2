"""`NodeTable`: the candidate nodes of one eval as columns, capacity and proposed usage as NumPy
arrays, kept current as the plan grows (every placement and stop adds or takes back usage), with
a log of the rows that changed for the group stacks to refresh from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from drover.model import Allocation, Node
from drover.model.state import has_flat_usage
from drover.scheduler.constraints import resolve_target
from drover.scheduler.feasible import ReadyNodes
from drover.scheduler.rank import FloatArray, IntArray
from drover.scheduler.state import InMemoryState, StateSnapshot


class NodeTable:
    """The candidate nodes of one eval, with capacity and proposed usage as arrays."""

    def __init__(
        self, nodes: Sequence[Node] | ReadyNodes, state: StateSnapshot, caps: FloatArray | None = None
    ) -> None:
        slots = None
        # Rows of each computed class, when known: feasibility is then decided class by class.
        self.class_rows: dict[str, IntArray] | None = None
        if isinstance(nodes, ReadyNodes):
            # Rows, capacities and classes are the cached ones (read only); usage is gathered
            # from the state's flat array in one step instead of node by node.
            self.nodes, self.row, caps, slots = list(nodes.nodes), nodes.row, nodes.caps, nodes.usage_slots
            self.class_rows = nodes.class_rows
        else:
            self.nodes = list(nodes)
            self.row = {n.id: i for i, n in enumerate(self.nodes)}
        if caps is None:
            caps = np.array([n.capacity() for n in self.nodes], dtype=np.float64).reshape(-1, 3)
        if slots is not None and has_flat_usage(state):
            flat = cast(InMemoryState, state)  # or a view over one with the same slots
            by_slot = np.frombuffer(flat.usage_buffer(), dtype=np.int64).reshape(-1, 3)
            used = by_slot[slots].astype(np.float64)
        else:
            used = np.array([state.node_usage(n.id) for n in self.nodes], dtype=np.float64).reshape(-1, 3)
        self.cap_cpu, self.cap_mem, self.cap_disk = caps[:, 0].copy(), caps[:, 1].copy(), caps[:, 2].copy()
        self.used_cpu, self.used_mem, self.used_disk = used[:, 0].copy(), used[:, 1].copy(), used[:, 2].copy()
        # 1/capacity, 0 where a node has none: binpack multiplies instead of dividing and
        # never sees a division by zero.
        with np.errstate(divide="ignore"):
            self.inv_cpu = np.where(self.cap_cpu > 0, 1.0 / self.cap_cpu, 0.0)
            self.inv_mem = np.where(self.cap_mem > 0, 1.0 / self.cap_mem, 0.0)
        # Rows whose usage changed, in order: group stacks replay this log to refresh their
        # cached fit masks row by row instead of recomputing them for every placement.
        self.changes: list[int] = []
        self._attr_cache: dict[str, list[str | None]] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def add_usage(self, node_id: str, alloc: Allocation, sign: int) -> None:
        i = self.row.get(node_id)
        if i is None:
            return
        r = alloc.resources
        self.used_cpu[i] += sign * r.cpu
        self.used_mem[i] += sign * r.memory_mb
        self.used_disk[i] += sign * r.disk_mb
        self.changes.append(i)

    def values(self, attribute: str) -> list[str | None]:
        """Each node's resolved value of `attribute` (None when missing), cached per eval."""
        vals = self._attr_cache.get(attribute)
        if vals is None:
            vals = []
            for n in self.nodes:
                v, ok = resolve_target(attribute, n)
                vals.append(v if ok else None)
            self._attr_cache[attribute] = vals
        return vals
