"""What a client request's node identity is checked against (drover.api.nodeauth): the keyed
hashes of the nodes' SecretIDs (a column of their rows, never in a node's document), and the
nodes of the allocs and service registrations a request names. `Reads` has these."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text

from drover.runtime.store.eventstore import EventStore


class IdentityReads:
    store: EventStore

    def _pairs(self, sql: str, ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        with self.store.reader.connect() as conn:
            return {r[0]: r[1] for r in conn.execute(text(sql), {"ids": list(ids)})}

    def node_secret_hash(self, node_id: str) -> str:
        """The node's SecretID hash; "" for an unknown node (or one registered without)."""
        return self.node_secret_hashes([node_id]).get(node_id, "")

    def node_secret_hashes(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The SecretID hash of each of `node_ids` that exists ("" for a node registered
        without one, before nodes had secrets)."""
        return self._pairs("SELECT id, coalesce(secret_hash, '') FROM nodes WHERE id = ANY(:ids)", node_ids)

    def secret_registered(self, secret_hash: str) -> bool:
        """Whether some node registered with this SecretID hash."""
        with self.store.reader.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM nodes WHERE secret_hash = :h LIMIT 1"), {"h": secret_hash}
            )
            return found.first() is not None

    def alloc_nodes(self, alloc_ids: Sequence[str]) -> dict[str, str]:
        """The node of each of `alloc_ids` that exists (an alloc never moves)."""
        return self._pairs("SELECT id, node_id FROM allocs WHERE id = ANY(:ids)", alloc_ids)

    def service_nodes(self, service_ids: Sequence[str]) -> dict[str, str]:
        """The node of each of the service registrations `service_ids` that exists."""
        return self._pairs("SELECT id, node_id FROM service_registrations WHERE id = ANY(:ids)", service_ids)
