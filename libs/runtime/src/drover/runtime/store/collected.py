"""What the garbage collector's events read and delete in the projections: `SqlState`'s part
for drover.model.gcreducer. A collecting append deletes hundreds of rows under the events
lock, so it reads none of their documents: the rows' statuses and what a deletion names for
the blocking queries (namespace, job, an alloc's node and eval: drover.runtime.watches) come
from their columns, looked up in the round trip that takes the lock (drover.runtime.store.
prefetch) or, for what was not, in one query when the reducer asks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from drover.runtime.watches import alloc_key, deployment_key, eval_key, job_key, list_key, node_key

# A row the buffer holds as gone (deleted, or looked up and absent).
DELETED = object()
_UNREAD = object()
TABLES = ("allocs", "evals", "deployments")
# A row's reference: its two statuses, its namespace and job, and an alloc's node and eval.
_REF_COLUMNS = {
    "allocs": "desired_status, client_status, namespace, job_id, node_id, eval_id",
    "evals": "status, '', namespace, job_id",
    "deployments": "doc->>'Status', '', namespace, job_id",
}


def refs_query(table: str) -> str:
    """The rows of `table` with IDs in a parameter, as (ID, their reference as a JSON array)."""
    return f"SELECT id, json_build_array({_REF_COLUMNS[table]})::text FROM {table} WHERE id = ANY(%s)"


class CollectedRows:
    """The deletions of `SqlState` (which holds the buffers named here)."""

    _allocs: dict[str, Any]
    _evals: dict[str, Any]
    _deployments: dict[str, Any]
    _dirty: dict[str, set[Any]]
    _absent_allocs: set[str]

    def init_collected(self) -> None:
        # Rows looked up by reference (`take_refs`); None: looked up and absent.
        self._refs: dict[str, dict[str, tuple[str, ...] | None]] = {t: {} for t in TABLES}
        # Rows deleted: what each names (namespace, job, and an alloc's node and eval).
        self._gone: dict[str, dict[str, tuple[str, ...]]] = {t: {} for t in TABLES}

    def fetch(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # SqlState's

    def _table_cache(self, table: str) -> dict[Any, Any]:
        return {"allocs": self._allocs, "evals": self._evals, "deployments": self._deployments}[table]

    def take_refs(self, table: str, ids: Iterable[str], rows: Iterable[tuple[Any, ...]]) -> None:
        """Note the references looked up (`refs_query`) of `ids`, those not found as absent."""
        refs = self._refs[table]
        for i in ids:
            refs.setdefault(i, None)
        for row_id, ref in rows:
            refs[row_id] = tuple(json.loads(ref))

    def _statuses(self, table: str, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(status, client status) by ID of the rows of `table` among `ids`: the buffer's
        first, else their references (looked up now if they were not)."""
        cache, refs = self._table_cache(table), self._refs[table]
        unread = [i for i in ids if cache.get(i, _UNREAD) is _UNREAD and i not in refs]
        if unread:
            self.take_refs(table, unread, self.fetch(refs_query(table), (unread,)))
        found: dict[str, tuple[str, str]] = {}
        for i in ids:
            obj = cache.get(i, _UNREAD)
            if obj is _UNREAD:
                ref = refs.get(i)
                if ref is not None:
                    found[i] = (ref[0], ref[1])
            elif obj is not DELETED:
                found[i] = (obj.desired_status, obj.client_status) if table == "allocs" else (obj.status, "")
        return found

    def alloc_statuses(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        return self._statuses("allocs", ids)

    def eval_statuses(self, ids: Sequence[str]) -> dict[str, str]:
        return {i: s for i, (s, _) in self._statuses("evals", ids).items()}

    def deployment_statuses(self, ids: Sequence[str]) -> dict[str, str]:
        return {i: s for i, (s, _) in self._statuses("deployments", ids).items()}

    def _delete(self, table: str, ids: Sequence[str]) -> None:
        cache, gone, refs = self._table_cache(table), self._gone[table], self._refs[table]
        for i in ids:
            obj = cache.get(i)
            if obj is not None and obj is not DELETED:
                is_alloc = table == "allocs"
                gone[i] = (obj.namespace, obj.job_id, *((obj.node_id, obj.eval_id) if is_alloc else ()))
            elif (ref := refs.get(i)) is not None and obj is None:
                gone[i] = ref[2:]  # its statuses left out
            else:
                continue
            cache[i] = DELETED
            self._dirty[table].add(i)
        if table == "allocs":
            self._absent_allocs.difference_update(ids)

    def delete_allocs(self, ids: Sequence[str]) -> None:
        self._delete("allocs", ids)

    def delete_evals(self, ids: Sequence[str]) -> None:
        self._delete("evals", ids)

    def delete_deployments(self, ids: Sequence[str]) -> None:
        self._delete("deployments", ids)

    def collected_keys(self, keys: set[str], name_allocs: bool) -> None:
        """Add the keys the buffered deletions change (as `touched` names a written row's)."""
        for table, gone in self._gone.items():
            dirty = self._dirty[table]
            for row_id, ref in gone.items():
                if row_id not in dirty:
                    continue
                keys.update((table, job_key(ref[0], ref[1]), list_key(table, ref[0])))
                if table == "allocs":
                    keys.update((node_key(ref[2]), eval_key(ref[3])))
                    if name_allocs:
                        keys.add(alloc_key(row_id))
                else:
                    keys.add(eval_key(row_id) if table == "evals" else deployment_key(row_id))
