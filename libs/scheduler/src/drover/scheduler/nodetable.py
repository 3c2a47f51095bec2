"""`NodeTable`: the candidate nodes of one eval as columns, capacity and proposed usage as NumPy
arrays, kept current as the plan grows (every placement and stop adds or takes back usage), with
a log of the rows that changed for the group stacks to refresh from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from drover.model import Allocation, Node
from drover.model.state import has_flat_usage, holds_ports
from drover.scheduler.constraints import resolve_target
from drover.scheduler.feasible import ReadyNodes
from drover.scheduler.netindex import NetworkIndex, NodePorts
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
        self._ready = nodes if isinstance(nodes, ReadyNodes) else None
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
        self._state = state
        # Ports: a NetworkIndex per row, built on first need from the state's live allocs on
        # the node and the plan's placements and stops there so far (kept in `_plan_ports`).
        self._net: dict[int, NetworkIndex] = {}
        self._plan_ports: dict[int, list[tuple[Allocation, int]]] = {}
        self._port_rows: IntArray | None = None
        self._holders: dict[str, int] | set[str] | None = None
        memo: dict[str, object] = self._ready.memo if self._ready is not None else {}
        self._ports_memo = cast(dict[int, NodePorts], memo.setdefault("node_ports", {}))

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
        if holds_ports(alloc):
            self._plan_ports.setdefault(i, []).append((alloc, sign))
            idx = self._net.get(i)
            if idx is not None:
                idx.add(alloc, sign)

    def network_index(self, row: int) -> NetworkIndex:
        """The ports taken on the row's node, with the plan's changes so far."""
        idx = self._net.get(row)
        if idx is None:
            node = self.nodes[row]
            idx = NetworkIndex(node, self._node_ports(row))
            if self._holders is None:
                self._holders = _port_nodes(self._state, self.nodes)
            if node.id in self._holders:
                idx.add_allocs(a for a in self._state.allocs_by_node(node.id) if not a.terminal_status())
            for alloc, sign in self._plan_ports.get(row, ()):
                idx.add(alloc, sign)
            self._net[row] = idx
        return idx

    def port_rows(self) -> IntArray:
        """The rows where a port may be taken: nodes with live allocs holding ports, with
        reserved ports, or given ports by this plan. Everywhere else every port is free."""
        if self._port_rows is None:
            if self._holders is None:
                self._holders = _port_nodes(self._state, self.nodes)
            rows = {self.row[n] for n in self._holders if n in self.row}
            rows.update(self._reserving_rows())
            self._port_rows = np.fromiter(sorted(rows), dtype=np.int64)
        if self._plan_ports:
            known = set(self._port_rows.tolist())
            extra = [r for r in self._plan_ports if r not in known]
            if extra:
                return np.concatenate([self._port_rows, np.array(extra, dtype=np.int64)])
        return self._port_rows

    def _node_ports(self, row: int) -> NodePorts:
        """The row's node's port offer, kept with the ready nodes across evals."""
        ports = self._ports_memo.get(row)
        if ports is None:
            ports = self._ports_memo[row] = NodePorts.of(self.nodes[row])
        return ports

    def _reserving_rows(self) -> list[int]:
        """Rows whose nodes reserve ports, kept with the ready nodes (they change only with
        the nodes)."""
        memo = self._ready.memo if self._ready is not None else {}
        rows = memo.get("reserving_rows")
        if not isinstance(rows, list):
            rows = [i for i, n in enumerate(self.nodes) if _reserves_ports(n)]
            memo["reserving_rows"] = rows
        return rows

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


def _port_nodes(state: StateSnapshot, nodes: Sequence[Node]) -> dict[str, int] | set[str]:
    """The nodes where live allocs hold ports: kept by an InMemoryState, else found by scan."""
    kept = getattr(state, "port_nodes", None)
    if kept is not None:
        found: dict[str, int] = kept()
        return found
    return {
        n.id
        for n in nodes
        if any(holds_ports(a) and not a.terminal_status() for a in state.allocs_by_node(n.id))
    }


def _reserves_ports(node: Node) -> bool:
    if node.reserved_resources.networks.reserved_host_ports:
        return True
    return any(a.reserved_ports for n in node.node_resources.node_networks for a in n.addresses)
