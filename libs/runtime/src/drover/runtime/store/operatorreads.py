"""The reads of what the operator sets: the API's (`Reads`' part) - the scheduler
configuration, the node pools (the built-in ones merged in), a pool's nodes and jobs, and what a
register asks of them in one query (`admission`) - and a replica's snapshot of them
(`load_operator`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from drover.model import Job, Node
from drover.model.events import SCHEDULER_CONFIG_STREAM, node_pool_stream
from drover.model.nodepool import BUILTIN_NODE_POOLS, NODE_POOL_ALL, NodePool, builtin_pool
from drover.model.operatorstate import OperatorState
from drover.model.schedulerconfig import DEFAULT_SCHEDULER_CONFIGURATION, SchedulerConfiguration
from drover.runtime.store.eventstore import EventStore
from drover.runtime.store.sqlparts import like_prefix, page_on_id

_VERSION = "(SELECT coalesce(max(version), 0) FROM events WHERE stream = :s)"


def load_operator(conn: Connection, state: OperatorState) -> None:
    """The scheduler configuration and the node pools into a replica's state (`load_into`)."""
    for (doc,) in conn.execute(text("SELECT doc::text FROM scheduler_config")):
        state.set_scheduler_config(SchedulerConfiguration.model_validate_json(doc))
    for (doc,) in conn.execute(text("SELECT doc::text FROM node_pools")):
        state.upsert_node_pool(NodePool.model_validate_json(doc))


class OperatorReads:
    """Held by `Reads`, which owns the store and the helpers named here."""

    store: EventStore

    def _docs(self, sql: str, **params: Any) -> list[str]:
        raise NotImplementedError  # Reads'

    def _with_status(self, jobs: list[Job]) -> list[Job]:
        raise NotImplementedError  # Reads'

    def _one(self, sql: str, **params: Any) -> tuple[Any, ...]:
        with self.store.reader.connect() as conn:
            return tuple(conn.execute(text(sql), params).one())

    # --- the scheduler configuration ---
    def scheduler_config(self) -> SchedulerConfiguration:
        """The configuration set last, or Nomad's default (at index 0)."""
        return self.stored_scheduler_config()[0] or DEFAULT_SCHEDULER_CONFIGURATION

    def stored_scheduler_config(self) -> tuple[SchedulerConfiguration | None, int]:
        """The configuration set last (None: never set), and its stream's version."""
        doc, version = self._one(
            f"SELECT (SELECT doc::text FROM scheduler_config), {_VERSION}", s=SCHEDULER_CONFIG_STREAM
        )
        config = SchedulerConfiguration.model_validate_json(doc) if doc is not None else None
        return config, int(version)

    # --- node pools ---
    def node_pool(self, name: str) -> NodePool | None:
        return self.node_pool_at(name)[0]

    def node_pool_at(self, name: str) -> tuple[NodePool | None, int]:
        """The pool (a built-in one too), and its stream's version."""
        doc, version = self._one(
            f"SELECT (SELECT doc::text FROM node_pools WHERE name = :n), {_VERSION}",
            n=name,
            s=node_pool_stream(name),
        )
        pool = builtin_pool(name) or (NodePool.model_validate_json(doc) if doc is not None else None)
        return pool, int(version)

    def node_pools(self, prefix: str = "") -> list[NodePool]:
        """Every pool whose name starts with `prefix`, the built-in ones too, by name."""
        docs = self._docs("SELECT doc::text FROM node_pools WHERE name LIKE :p", p=like_prefix(prefix))
        pools = [NodePool.model_validate_json(d) for d in docs]
        pools += [p for name, p in BUILTIN_NODE_POOLS.items() if name.startswith(prefix)]
        return sorted(pools, key=lambda p: p.name)

    def pool_nodes(self, name: str, *, start: str = "", limit: int = 0) -> list[Node]:
        """The pool's nodes by ID (`all`: every node), paged from ID `start`."""
        where, params = ["true"], {"pool": name}
        if name != NODE_POOL_ALL:
            where.append("doc->>'NodePool' = :pool")
        tail = page_on_id(where, params, start, limit)
        docs = self._docs(
            f"SELECT doc::text FROM nodes WHERE {' AND '.join(where)} ORDER BY id{tail}", **params
        )
        return [Node.model_validate_json(d) for d in docs]

    def pool_jobs(self, name: str, namespace: str) -> list[Job]:
        """The jobs placed in the pool (namespace `*`: of every namespace), their status derived."""
        where, params = ["doc->>'NodePool' = :pool"], {"pool": name, "ns": namespace}
        if namespace != "*":
            where.append("namespace = :ns")
        docs = self._docs(
            f"SELECT doc::text FROM jobs WHERE {' AND '.join(where)} ORDER BY namespace, id", **params
        )
        return self._with_status([Job.model_validate_json(d) for d in docs])

    def node_pool_in_use(self, name: str) -> tuple[bool, bool]:
        """Whether a node is in the pool, and whether a job of it has not ended (is not dead)."""
        (has_nodes,) = self._one(
            "SELECT EXISTS (SELECT 1 FROM nodes WHERE doc->>'NodePool' = :pool)", pool=name
        )
        live = any(j.status != "dead" for j in self.pool_jobs(name, "*"))
        return bool(has_nodes), live

    def admission(self, pool: str) -> tuple[SchedulerConfiguration, NodePool | None]:
        """What a register reads of the operator's settings, in one query: the scheduler
        configuration and the job's pool."""
        config, doc = self._one(
            "SELECT (SELECT doc::text FROM scheduler_config), (SELECT doc::text FROM node_pools WHERE name = :n)",
            n=pool,
        )
        found = builtin_pool(pool) or (NodePool.model_validate_json(doc) if doc is not None else None)
        stored = SchedulerConfiguration.model_validate_json(config) if config is not None else None
        return stored or DEFAULT_SCHEDULER_CONFIGURATION, found
