"""The reads of the console's topology (`Reads`' part): every node's capacity and every live
alloc's CPU and memory, as rows of columns - not documents - read again only where they
changed since a log position (`modify_index > since`), so that a console keeping the topology
in memory pays the documents' JSON once and then only for what moved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

if TYPE_CHECKING:
    from drover.runtime.store.eventstore import EventStore

# An alloc's CPU and memory: the sum over its tasks' AllocatedResources. `json` (parsed as a
# stream), not `jsonb` (built whole): a third cheaper over 100,000 documents.
# Only a live alloc's document is read.
_LIVE = "a.desired_status = 'run' AND a.client_status IN ('pending', 'running', 'unknown')"
_USAGE = (
    "LEFT JOIN LATERAL (SELECT sum((t.value->'Cpu'->>'CpuShares')::int) AS cpu, "
    "sum((t.value->'Memory'->>'MemoryMB')::int) AS mem "
    f"FROM json_each(CASE WHEN {_LIVE} THEN a.doc::json->'AllocatedResources'->'Tasks' END) t) r ON true"
)
_NODE_COLUMNS = (
    "id, coalesce(doc->>'Name', ''), coalesce(doc->>'Datacenter', ''), coalesce(doc->>'NodePool', 'default'), "
    "coalesce(doc->>'Status', 'ready'), coalesce(doc->>'SchedulingEligibility', 'eligible'), "
    "jsonb_typeof(doc->'DrainStrategy') = 'object', "
    "coalesce((doc->'NodeResources'->'Cpu'->>'CpuShares')::int, 0), "
    "coalesce((doc->'NodeResources'->'Memory'->>'MemoryMB')::int, 0), "
    "coalesce((doc->'ReservedResources'->'Cpu'->>'CpuShares')::int, 0), "
    "coalesce((doc->'ReservedResources'->'Memory'->>'MemoryMB')::int, 0)"
)


@dataclass(frozen=True, slots=True)
class NodeRow:
    id: str
    name: str
    datacenter: str
    node_pool: str
    status: str
    eligibility: str
    draining: bool
    cpu: int  # MHz, the node's whole
    memory_mb: int
    reserved_cpu: int  # held back by the operator (the node's `reserved` block)
    reserved_memory_mb: int


@dataclass(frozen=True, slots=True)
class AllocRow:
    """An alloc as the topology draws it; `live` False: it no longer takes resources (it
    stopped, or is desired to), and leaves the picture."""

    id: str
    node_id: str
    namespace: str
    job_id: str
    task_group: str
    client_status: str
    live: bool
    cpu: int
    memory_mb: int


class TopologyReads:
    """Held by `Reads`, which provides the store."""

    store: EventStore

    def _topology_rows(self, sql: str, params: dict[str, Any]) -> list[Any]:
        with self.store.reader.connect() as conn:
            return list(conn.execute(text(sql), params))

    def topology_nodes(self, since: int = 0) -> tuple[list[NodeRow], set[str]]:
        """The nodes changed after log position `since` (all of them at 0), and the IDs of
        every node there is (what a node deregistered or collected leaves)."""
        rows = self._topology_rows(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE modify_index > :since", {"since": since}
        )
        ids = (
            {r[0] for r in self._topology_rows("SELECT id FROM nodes", {})} if since else {r[0] for r in rows}
        )
        return [NodeRow(*r) for r in rows], ids

    def topology_allocs(self, since: int = 0) -> list[AllocRow]:
        """The allocs changed after log position `since` (all of them at 0). An alloc leaves
        the table (garbage collection) only once terminal, when it has left the picture."""
        sql = (
            f"SELECT a.id, a.node_id, a.namespace, a.job_id, a.task_group, a.client_status, {_LIVE}, "
            "coalesce(r.cpu, 0), coalesce(r.mem, 0) "
            f"FROM allocs a {_USAGE} WHERE a.modify_index > :since"
        )
        return [AllocRow(*r) for r in self._topology_rows(sql, {"since": since})]
