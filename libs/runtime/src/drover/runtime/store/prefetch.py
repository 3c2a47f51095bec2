"""What an append reads before it reduces: every row its events name, of every projection, in
one query sent with the events' insert (a plan touches hundreds of allocs, a register its job
and its eval), so the reducer finds them in `SqlState`'s caches instead of asking one by one.
Anything not prefetched is read when asked for."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from drover.model import Allocation, Deployment, Evaluation, Job, Node
from drover.model.events import Event, Reads
from drover.model.jobrestart import JobRestart
from drover.model.nodepool import NodePool, builtin_pool
from drover.runtime.store.collected import DELETED, refs_query
from drover.runtime.store.projections import SqlState, Statement

JobKey = tuple[str, str]


def reads_of(events: Sequence[Event], *, trust_new: bool = False) -> Reads:
    """What `events` will read (each declares its own: `Event.reads`); with `trust_new`, new
    placements are taken as absent."""
    r = Reads(trust_new=trust_new)
    for event in events:
        event.reads(r)
    return r


class Prefetch:
    """A prefetch query and what takes its rows in."""

    def __init__(
        self,
        state: SqlState,
        statement: Statement,
        wanted: list[tuple[str, dict[Any, Any], list[Any], type[BaseModel]]],
        job_keys: list[JobKey],
        restarts_of: list[JobKey],
        refs: dict[str, list[str]],
    ) -> None:
        self.state = state
        self.statement = statement
        self.wanted = wanted
        self.job_keys = job_keys
        self.restarts_of = restarts_of
        self.refs = refs

    def take(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Cache the documents found, and what was not found as absent."""
        st = self.state
        models: dict[str, tuple[dict[Any, Any], type[BaseModel]]] = {t: (c, m) for t, c, _, m in self.wanted}
        models["jobs"] = (st._jobs, Job)
        for k in self.restarts_of:
            st.restarts_by_job.setdefault(k, set())
        refs: dict[str, list[tuple[str, str]]] = {table: [] for table in self.refs}
        for table, namespace, key, doc in rows:
            if table.endswith("#"):
                refs[table[:-1]].append((key, doc))
                continue
            if table == "restarts_of":
                r = JobRestart.model_validate_json(doc)
                st.restarts.setdefault(r.id, r)
                st.restarts_by_job[(r.namespace, r.job_id)].add(r.id)
                continue
            cache, model = models[table]
            cache[(namespace, key) if table == "jobs" else key] = model.model_validate_json(doc)
        for table, cache, ids, _ in self.wanted:
            for i in ids:
                if i not in cache:
                    cache[i] = DELETED
                    if table == "allocs":
                        st._absent_allocs.add(i)
        for jk in self.job_keys:
            st._jobs.setdefault(jk, DELETED)
        for table, ids in self.refs.items():
            st.take_refs(table, ids, refs[table])


def _by_job_keys(select: str, table: str, keys: list[JobKey], id_column: str) -> tuple[str, list[Any]]:
    return (
        f"{select} FROM {table} WHERE (namespace, {id_column}) IN "
        "(SELECT * FROM unnest(%s::text[], %s::text[]))",
        [[k[0] for k in keys], [k[1] for k in keys]],
    )


def prefetch_query(state: SqlState, w: Reads) -> Prefetch | None:
    """`w` as one query of every table, to send with other statements (an append sends it
    with its insert), and what takes its rows in; None if `state` knows everything already."""
    wanted: list[tuple[str, dict[Any, Any], list[Any], type[BaseModel]]] = [
        ("allocs", state._allocs, list(set(w.allocs)), Allocation),
        ("evals", state._evals, list(set(w.evals)), Evaluation),
        ("deployments", state._deployments, list(set(w.deployments)), Deployment),
        ("nodes", state._nodes, list(set(w.nodes)), Node),
        ("job_restarts", state.restarts, list(set(w.restarts)), JobRestart),
        ("node_pools", state._node_pools, [n for n in set(w.node_pools) if not builtin_pool(n)], NodePool),
    ]
    parts: list[str] = []
    params: list[Any] = []
    for table, cache, ids, _ in wanted:
        ids[:] = [i for i in ids if i and i not in cache]
        if ids:
            key = "name" if table == "node_pools" else "id"
            parts.append(f"SELECT '{table}', '', {key}, doc::text FROM {table} WHERE {key} = ANY(%s)")
            params.append(ids)
    job_keys = [k for k in set(w.jobs) if k not in state._jobs]
    if job_keys:
        sql, args = _by_job_keys("SELECT 'jobs', namespace, id, doc::text", "jobs", job_keys, "id")
        parts.append(sql)
        params.extend(args)
    restarts_of = [k for k in set(w.restarts_of) if k not in state.restarts_by_job]
    if restarts_of:
        sql, args = _by_job_keys(
            "SELECT 'restarts_of', '', id, doc::text", "job_restarts", restarts_of, "job_id"
        )
        parts.append(sql)
        params.extend(args)
    refs: dict[str, list[str]] = {}
    for table, ids in w.refs.items():
        cache = state._table_cache(table)
        refs[table] = [i for i in set(ids) if i not in cache]
        if refs[table]:
            query = refs_query(table).replace("SELECT id,", f"SELECT '{table}#', '', id,", 1)
            parts.append(query)
            params.append(refs[table])
    if not parts:
        return None
    return Prefetch(state, (" UNION ALL ".join(parts), params), wanted, job_keys, restarts_of, refs)
