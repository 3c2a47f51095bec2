"""The SQL projections: the reducer's `StateWriter` over the projection tables, inside the
appending transaction. Writes are buffered and flushed with one executemany per table; reads
see the buffer first, so a batch of events reduces exactly as it would in memory."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Connection, text

from drover.common.alloc import Allocation
from drover.common.deployment import Deployment
from drover.common.evaluation import Evaluation
from drover.common.job import Job
from drover.common.node import Node

T = TypeVar("T", bound=BaseModel)
_DELETED = object()


def _doc(obj: BaseModel) -> str:
    return obj.model_dump_json(by_alias=True)


class SqlState:
    """A `StateWriter` for one transaction on `conn`."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.index = 0
        self._nodes: dict[str, Any] = {}
        self._jobs: dict[tuple[str, str], Any] = {}
        self._job_versions: dict[tuple[str, str, int], Job] = {}
        self._allocs: dict[str, Any] = {}
        self._evals: dict[str, Any] = {}
        self._deployments: dict[str, Any] = {}
        self._dirty: dict[str, set[Any]] = {
            k: set() for k in ("nodes", "jobs", "allocs", "evals", "deployments")
        }

    # --- reads ---
    def _load(
        self, cache: dict[Any, Any], key: Any, sql: str, params: dict[str, Any], model: type[T]
    ) -> T | None:
        if key in cache:
            v = cache[key]
            return None if v is _DELETED else v
        row = self.conn.execute(text(sql), params).first()
        obj = model.model_validate_json(row[0]) if row is not None else None
        cache[key] = obj if obj is not None else _DELETED
        return obj

    def node(self, node_id: str) -> Node | None:
        return self._load(
            self._nodes, node_id, "SELECT doc::text FROM nodes WHERE id = :id", {"id": node_id}, Node
        )

    def job(self, namespace: str, job_id: str) -> Job | None:
        return self._load(
            self._jobs,
            (namespace, job_id),
            "SELECT doc::text FROM jobs WHERE namespace = :ns AND id = :id",
            {"ns": namespace, "id": job_id},
            Job,
        )

    def alloc(self, alloc_id: str) -> Allocation | None:
        return self._load(
            self._allocs,
            alloc_id,
            "SELECT doc::text FROM allocs WHERE id = :id",
            {"id": alloc_id},
            Allocation,
        )

    def eval(self, eval_id: str) -> Evaluation | None:
        return self._load(
            self._evals, eval_id, "SELECT doc::text FROM evals WHERE id = :id", {"id": eval_id}, Evaluation
        )

    def deployment(self, deployment_id: str) -> Deployment | None:
        return self._load(
            self._deployments,
            deployment_id,
            "SELECT doc::text FROM deployments WHERE id = :id",
            {"id": deployment_id},
            Deployment,
        )

    def prefetch_allocs(self, ids: Iterable[str]) -> None:
        """Load many allocs in one query (a plan touches hundreds)."""
        want = [i for i in set(ids) if i and i not in self._allocs]
        if not want:
            return
        rows = self.conn.execute(text("SELECT id, doc::text FROM allocs WHERE id = ANY(:ids)"), {"ids": want})
        for alloc_id, doc in rows:
            self._allocs[alloc_id] = Allocation.model_validate_json(doc)
        for i in want:
            self._allocs.setdefault(i, _DELETED)

    # --- writes (buffered) ---
    def bump(self, index: int | None = None) -> int:
        if index is not None:
            self.index = index
        return self.index

    def upsert_node(self, node: Node) -> None:
        self._nodes[node.id] = node
        self._dirty["nodes"].add(node.id)

    def delete_node(self, node_id: str) -> None:
        self._nodes[node_id] = _DELETED
        self._dirty["nodes"].add(node_id)

    def upsert_job(self, job: Job) -> None:
        key = (job.namespace, job.id)
        self._jobs[key] = job
        self._job_versions[(job.namespace, job.id, job.version)] = job
        self._dirty["jobs"].add(key)

    def delete_job(self, namespace: str, job_id: str) -> None:
        self._jobs[(namespace, job_id)] = _DELETED
        self._dirty["jobs"].add((namespace, job_id))

    def upsert_eval(self, ev: Evaluation) -> None:
        self._evals[ev.id] = ev
        self._dirty["evals"].add(ev.id)

    def upsert_alloc(self, alloc: Allocation) -> None:
        self._allocs[alloc.id] = alloc
        self._dirty["allocs"].add(alloc.id)

    def upsert_deployment(self, dep: Deployment) -> None:
        self._deployments[dep.id] = dep
        self._dirty["deployments"].add(dep.id)

    def flush(self) -> None:
        """Write every buffered change: one statement per table and kind."""
        c = self.conn
        up, gone = self._split(self._nodes, "nodes")
        if up:
            c.execute(
                text(
                    "INSERT INTO nodes (id, doc, modify_index) VALUES (:id, CAST(:doc AS jsonb), :mi) "
                    "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, modify_index = EXCLUDED.modify_index"
                ),
                [{"id": n.id, "doc": _doc(n), "mi": n.modify_index} for n in up],
            )
        if gone:
            c.execute(text("DELETE FROM nodes WHERE id = ANY(:ids)"), {"ids": gone})

        up_jobs, gone_jobs = self._split(self._jobs, "jobs")
        if up_jobs:
            c.execute(
                text(
                    "INSERT INTO jobs (namespace, id, doc, modify_index) VALUES (:ns, :id, CAST(:doc AS jsonb), :mi) "
                    "ON CONFLICT (namespace, id) DO UPDATE SET doc = EXCLUDED.doc, modify_index = EXCLUDED.modify_index"
                ),
                [{"ns": j.namespace, "id": j.id, "doc": _doc(j), "mi": j.modify_index} for j in up_jobs],
            )
        for ns, job_id in gone_jobs:
            c.execute(text("DELETE FROM jobs WHERE namespace = :ns AND id = :id"), {"ns": ns, "id": job_id})
            c.execute(
                text("DELETE FROM job_versions WHERE namespace = :ns AND id = :id"), {"ns": ns, "id": job_id}
            )
        if self._job_versions:
            c.execute(
                text(
                    "INSERT INTO job_versions (namespace, id, version, doc) VALUES (:ns, :id, :v, CAST(:doc AS jsonb)) "
                    "ON CONFLICT (namespace, id, version) DO UPDATE SET doc = EXCLUDED.doc"
                ),
                [
                    {"ns": j.namespace, "id": j.id, "v": j.version, "doc": _doc(j)}
                    for (ns, jid, _), j in self._job_versions.items()
                    if self._jobs.get((ns, jid)) is not _DELETED
                ],
            )
            self._job_versions.clear()

        up_allocs, _ = self._split(self._allocs, "allocs")
        if up_allocs:
            c.execute(
                text(
                    "INSERT INTO allocs (id, namespace, job_id, node_id, eval_id, doc, modify_index) "
                    "VALUES (:id, :ns, :job, :node, :ev, CAST(:doc AS jsonb), :mi) "
                    "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, modify_index = EXCLUDED.modify_index, "
                    "node_id = EXCLUDED.node_id, eval_id = EXCLUDED.eval_id"
                ),
                [
                    {
                        "id": a.id,
                        "ns": a.namespace,
                        "job": a.job_id,
                        "node": a.node_id,
                        "ev": a.eval_id,
                        "doc": _doc(a),
                        "mi": a.modify_index,
                    }
                    for a in up_allocs
                ],
            )
        up_evals, _ = self._split(self._evals, "evals")
        if up_evals:
            c.execute(
                text(
                    "INSERT INTO evals (id, namespace, job_id, status, doc, modify_index) "
                    "VALUES (:id, :ns, :job, :st, CAST(:doc AS jsonb), :mi) "
                    "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, status = EXCLUDED.status, "
                    "modify_index = EXCLUDED.modify_index"
                ),
                [
                    {
                        "id": e.id,
                        "ns": e.namespace,
                        "job": e.job_id,
                        "st": e.status,
                        "doc": _doc(e),
                        "mi": e.modify_index,
                    }
                    for e in up_evals
                ],
            )
        up_deps, _ = self._split(self._deployments, "deployments")
        if up_deps:
            c.execute(
                text(
                    "INSERT INTO deployments (id, namespace, job_id, create_index, doc, modify_index) "
                    "VALUES (:id, :ns, :job, :ci, CAST(:doc AS jsonb), :mi) "
                    "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc, modify_index = EXCLUDED.modify_index"
                ),
                [
                    {
                        "id": d.id,
                        "ns": d.namespace,
                        "job": d.job_id,
                        "ci": d.create_index,
                        "doc": _doc(d),
                        "mi": d.modify_index,
                    }
                    for d in up_deps
                ],
            )

    def _split(self, cache: dict[Any, Any], table: str) -> tuple[list[Any], list[Any]]:
        up: list[Any] = []
        gone: list[Any] = []
        for key in self._dirty[table]:
            v = cache[key]
            if v is _DELETED:
                gone.append(key)
            else:
                up.append(v)
        self._dirty[table].clear()
        return up, gone
