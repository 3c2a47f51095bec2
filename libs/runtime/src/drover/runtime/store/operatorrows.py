"""`SqlState`'s part for what the operator sets: the `scheduler_config` row (one, once set)
and the `node_pools` rows (drover.model.operatorstate is their in-memory side; the built-in
pools are constants, never rows). Both are small and seldom written: a write is a statement
per row."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from drover.model.nodepool import NodePool, builtin_pool
from drover.model.schedulerconfig import SchedulerConfiguration
from drover.runtime.store.catalogrows import Statement, row_doc
from drover.runtime.store.collected import DELETED
from drover.runtime.watches import NODE_POOLS_KEY, SCHEDULER_CONFIG_KEY

T = TypeVar("T", bound=BaseModel)
# The scheduler configuration's cache key (its table holds one row).
_CONFIG = "scheduler"


class OperatorRows:
    """Held by `SqlState`, which owns the loader named here."""

    def init_operator(self) -> None:
        self._scheduler_config: dict[str, Any] = {}
        self._node_pools: dict[str, Any] = {}
        self._operator_dirty: set[str] = set()
        self._pools_dirty: set[str] = set()

    def _load(self, cache: dict[Any, Any], key: Any, sql: str, params: Any, model: type[T]) -> T | None:
        raise NotImplementedError  # SqlState's

    # --- reads ---
    def stored_scheduler_config(self) -> SchedulerConfiguration | None:
        return self._load(
            self._scheduler_config,
            _CONFIG,
            "SELECT doc::text FROM scheduler_config WHERE id = %s",
            (_CONFIG,),
            SchedulerConfiguration,
        )

    def node_pool(self, name: str) -> NodePool | None:
        return builtin_pool(name) or self._load(
            self._node_pools, name, "SELECT doc::text FROM node_pools WHERE name = %s", (name,), NodePool
        )

    # --- writes (buffered) ---
    def set_scheduler_config(self, config: SchedulerConfiguration) -> None:
        self._scheduler_config[_CONFIG] = config
        self._operator_dirty.add(_CONFIG)

    def upsert_node_pool(self, pool: NodePool) -> None:
        self._node_pools[pool.name] = pool
        self._pools_dirty.add(pool.name)

    def delete_node_pool(self, name: str) -> None:
        self._node_pools[name] = DELETED
        self._pools_dirty.add(name)

    def operator_keys(self, keys: set[str]) -> None:
        """The blocking queries' keys the buffered writes change."""
        if self._operator_dirty:
            keys.add(SCHEDULER_CONFIG_KEY)
        if self._pools_dirty:
            keys.add(NODE_POOLS_KEY)

    def flush_operator(self, writes: list[Statement]) -> None:
        if self._operator_dirty:
            config = self._scheduler_config[_CONFIG]
            writes.append((
                "INSERT INTO scheduler_config (id, doc, modify_index) VALUES (%s, %s::jsonb, %s) "
                "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, modify_index = EXCLUDED.modify_index",
                (_CONFIG, row_doc(config), config.modify_index),
            ))  # fmt: skip
            self._operator_dirty.clear()
        for name in sorted(self._pools_dirty):
            pool = self._node_pools[name]
            if pool is DELETED:
                writes.append(("DELETE FROM node_pools WHERE name = %s", (name,)))
                continue
            writes.append((
                "INSERT INTO node_pools (name, doc, modify_index) VALUES (%s, %s::jsonb, %s) "
                "ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc, modify_index = EXCLUDED.modify_index",
                (name, row_doc(pool), pool.modify_index),
            ))  # fmt: skip
        self._pools_dirty.clear()
