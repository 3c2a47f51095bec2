"""The SQL projections: the reducer's `StateWriter` over the projection tables, inside the
appending transaction. Writes are buffered and flushed with one statement per table; reads
see the buffer first, so a batch of events reduces exactly as it would in memory.

An append holds the log's lock while this runs, and under load every round trip to the
server costs far more than its query (the appending thread waits for a core, and for the
GIL, after each one), so statements are pipelined: what needs no answer is queued and sent
with the next statement that does, and the writes go in one pipeline with the caller's last
statements."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from pydantic import BaseModel
from sqlalchemy import Connection

from drover.model.alloc import Allocation
from drover.model.deployment import Deployment
from drover.model.evaluation import Evaluation
from drover.model.events import Event, PlanApplied
from drover.model.job import Job
from drover.model.jobrestart import JobRestart
from drover.model.node import Node
from drover.model.placements import metric_json
from drover.model.scaling import JobScalingEvents
from drover.runtime.store.catalogrows import CatalogRows, row_doc
from drover.runtime.store.catalogrows import Statement as Statement
from drover.runtime.store.collected import DELETED, CollectedRows
from drover.runtime.store.operatorrows import OperatorRows
from drover.runtime.store.touched import written_keys
from drover.runtime.watches import SERVICES_KEY

T = TypeVar("T", bound=BaseModel)
PROJECTION_TABLES = (
    "nodes",
    "jobs",
    "job_versions",
    "allocs",
    "evals",
    "deployments",
    "job_restarts",
    "scaling_events",
    "variables",
    "service_registrations",
    "namespaces",
    "acl_policies",
    "acl_tokens",
    "scheduler_config",
    "node_pools",
)
# The tables whose rows the writes mark dirty (job versions are kept apart).
_DIRTY_TABLES = (
    "nodes",
    "jobs",
    "allocs",
    "evals",
    "deployments",
    "job_restarts",
    "scaling_events",
    "variables",
    "services",
    "namespaces",
    "acl_policies",
    "acl_tokens",
)
# Tables whose `doc` is `text` (kept as sent, never parsed; see migrations 0002 and 0003), the
# others' is `jsonb`.
_TEXT_DOC_TABLES = frozenset({"allocs"})
# SQL types of the projection columns (for the arrays `_upsert` sends).
_COLUMN_TYPES = {
    "id": "text",
    "namespace": "text",
    "job_id": "text",
    "node_id": "text",
    "eval_id": "text",
    "status": "text",
    "desired_status": "text",
    "client_status": "text",
    "task_group": "text",
    "version": "integer",
    "modify_index": "bigint",
    "path": "text",
    "create_index": "bigint",
    "service_name": "text",
    "alloc_id": "text",
    "name": "text",
    "accessor_id": "text",
    "secret_hash": "text",
}


_NO_METRICS = {"metrics"}


def _alloc_doc(a: Allocation, metrics_json: Mapping[str, str]) -> str:
    """An alloc's document, its metrics last and without their defaults: taken as they are
    from `metrics_json` where they are there (a plan applier's allocs, whose metrics came as
    JSON and were never decoded: PlanApplied.metrics_json), rendered alike where not (a
    rebuild's, a client update's), so both write the same text."""
    text = metrics_json.get(a.id) if metrics_json else None
    if text is None:
        if a.metrics is None:
            return row_doc(a)
        text = metric_json(a.metrics)
    return a.model_dump_json(by_alias=True, exclude=_NO_METRICS)[:-1] + ',"Metrics":' + text + "}"


def _row_json(row: dict[str, Any]) -> str:
    return "{" + ",".join(f'"{c}":' + (v if c == "doc" else json.dumps(v)) for c, v in row.items()) + "}"


class SqlState(CatalogRows, CollectedRows, OperatorRows):
    """A `StateWriter` for one transaction on `conn`."""

    def __init__(self, conn: Connection, *, owns_events: bool = False) -> None:
        self.conn = conn
        raw = conn.connection.dbapi_connection
        assert isinstance(raw, psycopg.Connection)
        self.raw: psycopg.Connection[Any] = raw
        # Statements whose answer nobody waits for, sent with the next round trip.
        self._queued: list[Statement] = []
        # The reducer may fill the events' allocs in place (see reducer._write_alloc): set by
        # an appender that does not use its events' allocs afterwards except to reduce them
        # again (the plan applier's own replica).
        self.owns_events = owns_events
        # Placement metrics as JSON by alloc ID (PlanApplied.metrics_json of the events applied).
        self.metrics_json: dict[str, str] = {}
        self.index: int = 0
        self._nodes: dict[str, Any] = {}
        # Nodes' SecretID hashes set by this transaction (a column of their rows).
        self._node_secret_hashes: dict[str, str] = {}
        self._jobs: dict[tuple[str, str], Any] = {}
        self._job_versions: dict[tuple[str, str, int], Job] = {}
        self._scaling: dict[tuple[str, str], Any] = {}
        self._allocs: dict[str, Any] = {}
        self._evals: dict[str, Any] = {}
        self._deployments: dict[str, Any] = {}
        # Job restarts by ID, and the IDs of each job's that are known (all of them, once the
        # job's were looked up: `job_restarts_of`).
        self.restarts: dict[str, Any] = {}
        self.restarts_by_job: dict[tuple[str, str], set[str]] = {}
        # Allocs looked up and not in the table: written with COPY (no conflict possible: every
        # projection write happens under the log's lock), about twice as fast as an upsert.
        self._absent_allocs: set[str] = set()
        self._dirty: dict[str, set[Any]] = {k: set() for k in _DIRTY_TABLES}
        self.init_collected()
        self.init_catalogs()
        self.init_operator()

    def take_metrics(self, events: Iterable[Event]) -> None:
        """Note the placement metrics `events` carry as JSON (PlanApplied.metrics_json), for
        the documents of their allocs."""
        seen: list[dict[str, str]] = []
        for e in events:
            texts = e.metrics_json if isinstance(e, PlanApplied) else None
            if texts and not any(texts is t for t in seen):  # a large plan's parts share one
                seen.append(texts)
        if len(seen) == 1 and not self.metrics_json:
            self.metrics_json = seen[0]  # only read
        else:
            self.metrics_json = {k: v for texts in (self.metrics_json, *seen) for k, v in texts.items()}

    # --- round trips ---
    def queue(self, sql: str, params: Any = None) -> None:
        """Send `sql` with the next statement that needs an answer (or at flush)."""
        self._queued.append((sql, params))

    def run(self, statements: list[Statement]) -> None:
        """Every queued statement and then `statements`, in one round trip."""
        todo, self._queued = [*self._queued, *statements], []
        if len(todo) == 1:
            self.raw.execute(*todo[0])
        elif todo:
            with self.raw.pipeline():
                for sql, params in todo:
                    self.raw.execute(sql, params)

    def fetch(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """The rows of `sql`, sent with whatever is queued (one round trip)."""
        if not self._queued:
            return self.raw.execute(sql, params).fetchall()
        with self.raw.pipeline():
            for q in self._queued:
                self.raw.execute(*q)
            self._queued = []
            return self.raw.execute(sql, params).fetchall()

    # --- reads ---
    def _load(self, cache: dict[Any, Any], key: Any, sql: str, params: Any, model: type[T]) -> T | None:
        if key in cache:
            v = cache[key]
            return None if v is DELETED else v
        rows = self.fetch(sql, params)
        obj = model.model_validate_json(rows[0][0]) if rows else None
        cache[key] = obj if obj is not None else DELETED
        if obj is None and cache is self._allocs:
            self._absent_allocs.add(key)
        return obj

    def node(self, node_id: str) -> Node | None:
        return self._load(self._nodes, node_id, "SELECT doc::text FROM nodes WHERE id = %s", (node_id,), Node)

    def job(self, namespace: str, job_id: str) -> Job | None:
        return self._load(
            self._jobs,
            (namespace, job_id),
            "SELECT doc::text FROM jobs WHERE namespace = %s AND id = %s",
            (namespace, job_id),
            Job,
        )

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None:
        written = self._job_versions.get((namespace, job_id, version))
        if written is not None:
            return written
        rows = self.fetch(
            "SELECT doc::text FROM job_versions WHERE namespace = %s AND id = %s AND version = %s",
            (namespace, job_id, version),
        )
        return Job.model_validate_json(rows[0][0]) if rows else None

    def scaling_events(self, namespace: str, job_id: str) -> JobScalingEvents | None:
        return self._load(
            self._scaling,
            (namespace, job_id),
            "SELECT doc::text FROM scaling_events WHERE namespace = %s AND job_id = %s",
            (namespace, job_id),
            JobScalingEvents,
        )

    def alloc(self, alloc_id: str) -> Allocation | None:
        return self._load(
            self._allocs, alloc_id, "SELECT doc::text FROM allocs WHERE id = %s", (alloc_id,), Allocation
        )

    def eval(self, eval_id: str) -> Evaluation | None:
        return self._load(
            self._evals, eval_id, "SELECT doc::text FROM evals WHERE id = %s", (eval_id,), Evaluation
        )

    def deployment(self, deployment_id: str) -> Deployment | None:
        return self._load(
            self._deployments,
            deployment_id,
            "SELECT doc::text FROM deployments WHERE id = %s",
            (deployment_id,),
            Deployment,
        )

    def job_restart(self, restart_id: str) -> JobRestart | None:
        return self._load(
            self.restarts,
            restart_id,
            "SELECT doc::text FROM job_restarts WHERE id = %s",
            (restart_id,),
            JobRestart,
        )

    def job_restarts_of(self, namespace: str, job_id: str) -> list[JobRestart]:
        key = (namespace, job_id)
        if key not in self.restarts_by_job:
            rows = self.fetch(
                "SELECT id, doc::text FROM job_restarts WHERE namespace = %s AND job_id = %s", key
            )
            for restart_id, doc in rows:
                self.restarts.setdefault(restart_id, JobRestart.model_validate_json(doc))
            self.restarts_by_job[key] = {r[0] for r in rows}
        found = (self.restarts.get(i) for i in sorted(self.restarts_by_job[key]))
        return [r for r in found if r is not None and r is not DELETED]

    def assume_absent(self, ids: Iterable[str]) -> None:
        """Take allocs as not in the table without looking (new placements: fresh IDs). Were
        one there after all, its COPY fails on the primary key and the caller starts over."""
        for i in ids:
            if i not in self._allocs:
                self._allocs[i] = DELETED
                self._absent_allocs.add(i)

    # --- writes (buffered) ---
    def bump(self, index: int | None = None) -> int:
        if index is not None:
            self.index = index
        return self.index

    def upsert_node(self, node: Node) -> None:
        self._nodes[node.id] = node
        self._dirty["nodes"].add(node.id)

    def delete_node(self, node_id: str) -> None:
        self._nodes[node_id] = DELETED
        self._dirty["nodes"].add(node_id)
        self._node_secret_hashes.pop(node_id, None)

    def set_node_secret_hash(self, node_id: str, secret_hash: str) -> None:
        self._node_secret_hashes[node_id] = secret_hash

    def upsert_job(self, job: Job) -> None:
        key = (job.namespace, job.id)
        self._jobs[key] = job
        self._job_versions[(job.namespace, job.id, job.version)] = job
        self._dirty["jobs"].add(key)

    def delete_job(self, namespace: str, job_id: str) -> None:
        self._jobs[(namespace, job_id)] = DELETED
        self._dirty["jobs"].add((namespace, job_id))
        self._scaling[(namespace, job_id)] = DELETED
        self._dirty["scaling_events"].add((namespace, job_id))

    def upsert_job_version(self, job: Job) -> None:
        self._job_versions[(job.namespace, job.id, job.version)] = job

    def upsert_scaling_events(self, events: JobScalingEvents) -> None:
        key = (events.namespace, events.job_id)
        self._scaling[key] = events
        self._dirty["scaling_events"].add(key)

    def upsert_eval(self, evaluation: Evaluation) -> None:
        self._evals[evaluation.id] = evaluation
        self._dirty["evals"].add(evaluation.id)

    def upsert_alloc(self, alloc: Allocation) -> None:
        self._allocs[alloc.id] = alloc
        self._dirty["allocs"].add(alloc.id)

    def upsert_deployment(self, dep: Deployment) -> None:
        self._deployments[dep.id] = dep
        self._dirty["deployments"].add(dep.id)

    def upsert_job_restart(self, restart: JobRestart) -> None:
        self.restarts[restart.id] = restart
        self.restarts_by_job.setdefault((restart.namespace, restart.job_id), set()).add(restart.id)
        self._dirty["job_restarts"].add(restart.id)

    def delete_job_restart(self, restart: JobRestart) -> None:
        self.restarts[restart.id] = DELETED
        self._dirty["job_restarts"].add(restart.id)

    def touched(self) -> tuple[set[str], list[str]]:
        """The keys of what the buffered writes and deletions change, and the categories of
        which every key counts as changed (drover.runtime.watches), for the blocking queries
        waiting on them; read before `flush`."""
        caches = {"allocs": self._allocs, "evals": self._evals, "deployments": self._deployments}
        keys, every = written_keys(self._dirty, self._job_versions, self.restarts, caches)
        if self.services_touched():
            keys.add(SERVICES_KEY)
        self.operator_keys(keys)
        self.collected_keys(keys, name_allocs=not every)
        return keys, every

    def flush(self, then: Sequence[Statement] = ()) -> None:
        """Write every buffered change: one statement per table and kind, the new allocs
        COPYed first, then the rest in one pipeline with what is queued and `then`."""
        writes: list[Statement] = []
        self._flush_nodes(writes)
        self._flush_jobs(writes)
        self._flush_allocs(writes)
        evals, gone_evals = self._split(self._evals, "evals")
        self._upsert(writes, "evals", ("id",), [
            {"id": e.id, "namespace": e.namespace, "job_id": e.job_id, "status": e.status, "doc": row_doc(e),
             "modify_index": e.modify_index}
            for e in evals
        ])  # fmt: skip
        deps, gone_deps = self._split(self._deployments, "deployments")
        self._upsert(writes, "deployments", ("id",), [
            {"id": d.id, "namespace": d.namespace, "job_id": d.job_id, "create_index": d.create_index,
             "doc": row_doc(d), "modify_index": d.modify_index}
            for d in deps
        ])  # fmt: skip
        for table, gone in (("evals", gone_evals), ("deployments", gone_deps)):
            if gone:
                writes.append((f"DELETE FROM {table} WHERE id = ANY(%s)", (gone,)))
        self._flush_restarts(writes)
        self._flush_scaling(writes)
        self.flush_catalogs(writes)
        self.flush_operator(writes)
        self.run([*writes, *then])

    def _flush_scaling(self, writes: list[Statement]) -> None:
        events, gone = self._split(self._scaling, "scaling_events")
        self._upsert(writes, "scaling_events", ("namespace", "job_id"), [
            {"namespace": e.namespace, "job_id": e.job_id, "doc": row_doc(e), "modify_index": e.modify_index}
            for e in events
        ])  # fmt: skip
        for ns, job_id in gone:
            writes.append(("DELETE FROM scaling_events WHERE namespace = %s AND job_id = %s", (ns, job_id)))

    def _flush_restarts(self, writes: list[Statement]) -> None:
        restarts, gone = self._split(self.restarts, "job_restarts")
        self._upsert(writes, "job_restarts", ("id",), [
            {"id": r.id, "namespace": r.namespace, "job_id": r.job_id, "status": r.status, "doc": row_doc(r),
             "create_index": r.create_index, "modify_index": r.modify_index}
            for r in restarts
        ])  # fmt: skip
        if gone:
            writes.append(("DELETE FROM job_restarts WHERE id = ANY(%s)", (gone,)))

    def _flush_nodes(self, writes: list[Statement]) -> None:
        nodes, gone = self._split(self._nodes, "nodes")
        rows = [{"id": n.id, "doc": row_doc(n), "modify_index": n.modify_index} for n in nodes]
        self._upsert(writes, "nodes", ("id",), rows)
        if self._node_secret_hashes:
            ids, hashes = list(self._node_secret_hashes), list(self._node_secret_hashes.values())
            self._node_secret_hashes = {}
            writes.append((
                "UPDATE nodes SET secret_hash = s.h FROM unnest(%s::text[], %s::text[]) AS s(id, h) "
                "WHERE nodes.id = s.id",
                (ids, hashes),
            ))  # fmt: skip
        if gone:
            writes.append(("DELETE FROM nodes WHERE id = ANY(%s)", (gone,)))

    def _flush_jobs(self, writes: list[Statement]) -> None:
        """The jobs, a purged job's versions with it, and the versions registered."""
        jobs, gone = self._split(self._jobs, "jobs")
        rows = [
            {"namespace": j.namespace, "id": j.id, "doc": row_doc(j), "modify_index": j.modify_index}
            for j in jobs
        ]
        self._upsert(writes, "jobs", ("namespace", "id"), rows)
        if gone:
            keys = ([ns for ns, _ in gone], [job_id for _, job_id in gone])
            for table in ("jobs", "job_versions"):
                writes.append((
                    f"DELETE FROM {table} WHERE (namespace, id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                    keys,
                ))  # fmt: skip
        versions = [
            {"namespace": j.namespace, "id": j.id, "version": j.version, "doc": row_doc(j)}
            for (ns, jid, _), j in self._job_versions.items()
            if self._jobs.get((ns, jid)) is not DELETED
        ]
        self._job_versions.clear()
        self._upsert(writes, "job_versions", ("namespace", "id", "version"), versions)

    def _flush_allocs(self, writes: list[Statement]) -> None:
        """New allocs by COPY, at once; the others upserted with the rest of the writes."""
        allocs, gone = self._split(self._allocs, "allocs")
        if gone:
            writes.append(("DELETE FROM allocs WHERE id = ANY(%s)", (gone,)))
        new = [a for a in allocs if a.id in self._absent_allocs]
        new_ids = {a.id for a in new}
        if new:
            self._copy_allocs(new)
            self._absent_allocs -= new_ids
        self._upsert(writes, "allocs", ("id",), [
            {"id": a.id, "namespace": a.namespace, "job_id": a.job_id, "node_id": a.node_id, "eval_id": a.eval_id,
             "desired_status": a.desired_status, "client_status": a.client_status, "task_group": a.task_group,
             "doc": _alloc_doc(a, self.metrics_json), "modify_index": a.modify_index}
            for a in allocs
            if a.id not in new_ids
        ])  # fmt: skip

    def _copy_allocs(self, new: list[Allocation]) -> None:
        # COPY cannot be pipelined: what is queued (a savepoint) goes first.
        self.run([])
        keys = ("id", "namespace", "job_id", "node_id", "eval_id", "desired_status", "client_status", "task_group")  # fmt: skip
        cols = (*keys, "doc", "modify_index")
        with self.raw.cursor().copy(f"COPY allocs ({', '.join(cols)}) FROM STDIN") as copy:
            for a in new:
                fields = (
                    a.id,
                    a.namespace,
                    a.job_id,
                    a.node_id,
                    a.eval_id,
                    a.desired_status,
                    a.client_status,
                    a.task_group,
                )
                copy.write_row((*fields, _alloc_doc(a, self.metrics_json), a.modify_index))

    @staticmethod
    def _upsert(
        writes: list[Statement], table: str, key: tuple[str, ...], rows: list[dict[str, Any]]
    ) -> None:
        """INSERT ... ON CONFLICT (key) DO UPDATE for many rows in one statement: the rows go
        as one JSON array (each `doc`, already JSON text, spliced in as it is), which Postgres
        unpacks with json_array_elements - one plan, where an executemany runs a statement
        per row."""
        if not rows:
            return
        cols = list(rows[0])
        payload = "[" + ",".join(_row_json(r) for r in rows) + "]"
        doc = "CAST(r->'doc' AS text)" if table in _TEXT_DOC_TABLES else "CAST(r->'doc' AS jsonb)"
        select = ", ".join(doc if c == "doc" else f"CAST(r->>'{c}' AS {_COLUMN_TYPES[c]})" for c in cols)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols if c not in key)
        sql = (
            f"INSERT INTO {table} ({', '.join(cols)}) SELECT {select} "
            "FROM json_array_elements(CAST(%s AS json)) AS r "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        )
        writes.append((sql, (payload,)))

    def _split(self, cache: dict[Any, Any], table: str) -> tuple[list[Any], list[Any]]:
        up: list[Any] = []
        gone: list[Any] = []
        for key in self._dirty[table]:
            v = cache[key]
            if v is DELETED:
                gone.append(key)
            else:
                up.append(v)
        self._dirty[table].clear()
        return up, gone
