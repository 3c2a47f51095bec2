"""The read queries on the projections (the current-state tables the reducer writes), in one
place: the API's reads (`Reads`), the snapshot every replica starts from (`load_into`), and the
allocs as the broker's replica reads them (`alloc_records`). The event log's own reads are the
store's (`EventStore.read`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from pydantic import TypeAdapter
from sqlalchemy import Connection, text

from drover.model import Allocation, Deployment, Evaluation, Job, Node
from drover.model.alloc import ReplicaAllocation
from drover.model.events import job_stream, restart_stream, variable_stream
from drover.model.jobrestart import JobRestart
from drover.model.namespace import ALL_NAMESPACES, Namespace
from drover.model.scaling import JobScalingEvents
from drover.model.serviceregistration import ServiceRegistration
from drover.model.state import InMemoryState
from drover.model.summary import JobSummary, job_summary
from drover.model.variables import VariableEncrypted
from drover.runtime.store import children
from drover.runtime.store.aclreads import AclReads, load_acl
from drover.runtime.store.docreads import DocReads
from drover.runtime.store.eventstore import EventStore
from drover.runtime.store.identityreads import IdentityReads
from drover.runtime.store.listreads import ListReads
from drover.runtime.store.namespacereads import NamespaceReads, split_job_token
from drover.runtime.store.operatorreads import OperatorReads, load_operator
from drover.runtime.store.sqlparts import like_prefix as _like_prefix
from drover.runtime.store.sqlparts import page_on_id as _page
from drover.runtime.store.timelinereads import TimelineReads
from drover.runtime.store.topologyreads import TopologyReads

_ALLOCS: TypeAdapter[list[Allocation]] = TypeAdapter(list[Allocation])
S = TypeVar("S", bound=InMemoryState)


def load_into(store: EventStore, state: S, load_allocs: Callable[[Connection, S], None]) -> S:
    """The projections as one consistent snapshot (REPEATABLE READ) loaded into `state`, at the
    log position they reflect; the allocs read by `load_allocs` (a leaner replica reads them
    its own way)."""
    with store.engine.connect() as conn:
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        position = int(conn.exec_driver_sql("SELECT coalesce(max(position), 0) FROM events").scalar_one())
        for (doc,) in conn.execute(text("SELECT doc::text FROM nodes")):
            state.upsert_node(Node.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM job_versions ORDER BY version")):
            state.upsert_job(Job.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM jobs")):
            state.upsert_job(Job.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM deployments ORDER BY create_index")):
            state.upsert_deployment(Deployment.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM evals")):
            state.upsert_eval(Evaluation.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM job_restarts")):
            state.upsert_job_restart(JobRestart.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM scaling_events")):
            state.upsert_scaling_events(JobScalingEvents.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM variables")):
            state.upsert_variable(VariableEncrypted.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM service_registrations")):
            state.upsert_service(ServiceRegistration.model_validate_json(doc))
        for (doc,) in conn.execute(text("SELECT doc::text FROM namespaces")):
            state.upsert_namespace(Namespace.model_validate_json(doc))
        load_acl(conn, state)
        load_operator(conn, state)
        load_allocs(conn, state)
    state.bump(position)
    return state


def alloc_documents(conn: Connection, state: InMemoryState) -> None:
    """Every alloc's document into `state`, as a replica keeps it."""
    # Streamed (a server-side cursor) rather than fetched whole: a million allocs' documents
    # would otherwise sit in memory as text while being decoded.
    allocs = text("SELECT doc::text FROM allocs").execution_options(stream_results=True, yield_per=2000)
    for (doc,) in conn.execute(allocs):
        state.upsert_alloc(ReplicaAllocation.model_validate_json(doc))


def load_snapshot(store: EventStore) -> InMemoryState:
    """The projections as a replica's state, at the log position they reflect."""
    return load_into(store, InMemoryState(drop_metrics=True, owns_events=True), alloc_documents)


def alloc_records(conn: Connection) -> Iterator[tuple[str, str, str, str, str, str]]:
    """(id, namespace, job, node, desired status, client status) of every alloc, from the allocs
    table's columns, the documents unread: all the broker keeps of an alloc."""
    allocs = text(
        "SELECT id, namespace, job_id, node_id, desired_status, client_status FROM allocs"
    ).execution_options(stream_results=True, yield_per=10000)
    for row in conn.execute(allocs):
        yield row[0], row[1], row[2], row[3], row[4], row[5]


class Reads(
    DocReads,
    NamespaceReads,
    AclReads,
    IdentityReads,
    OperatorReads,
    ListReads,
    TimelineReads,
    TopologyReads,
):
    """The API's reads: documents in Nomad's form, by key, prefix and page (namespaces':
    drover.runtime.store.namespacereads; ACL's: drover.runtime.store.aclreads; what a client's
    node identity is checked against: drover.runtime.store.identityreads; the operator's:
    drover.runtime.store.operatorreads; the console's filtered pages and counts:
    drover.runtime.store.listreads; a job's timeline: drover.runtime.store.timelinereads; the
    index and single documents, and the connection a read holds: drover.runtime.store.docreads)."""

    def _docs(self, sql: str, **params: Any) -> list[str]:
        with self._connect() as conn:
            return [r[0] for r in conn.execute(text(sql), params)]

    def jobs(self, namespace: str, prefix: str = "", *, start: str = "", limit: int = 0) -> list[Job]:
        """Jobs by ID prefix, of `namespace` (`*`: every one's, by namespace then ID), from the
        page token `start` on (Nomad's `<namespace>.<id>`, or an ID: `job_token`)."""
        where = ["id LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        if namespace != ALL_NAMESPACES:
            where.append("namespace = :ns")
            params["ns"] = namespace
        if start:
            where.append("(namespace, id) >= (:start_ns, :start_id)")
            params["start_ns"], params["start_id"] = split_job_token(start, namespace)
        tail = _page([], params, "", limit)
        docs = self._docs(
            f"SELECT doc::text FROM jobs WHERE {' AND '.join(where)} ORDER BY namespace, id{tail}", **params
        )
        return self._with_status([Job.model_validate_json(d) for d in docs])

    def job(self, namespace: str, job_id: str) -> Job | None:
        """The job's document as registered (its Status not derived: `job_with_status`)."""
        docs = self._docs(
            "SELECT doc::text FROM jobs WHERE namespace = :ns AND id = :id", ns=namespace, id=job_id
        )
        return Job.model_validate_json(docs[0]) if docs else None

    def job_with_status(self, namespace: str, job_id: str) -> Job | None:
        """The job with its Status derived from its allocs and evals now, as Nomad shows it."""
        job = self.job(namespace, job_id)
        return self._with_status([job])[0] if job is not None else None

    def job_exists(self, namespace: str, job_id: str) -> bool:
        """Whether the job is registered (what its sub-resources check before answering)."""
        with self._connect() as conn:
            row = conn.execute(
                text("SELECT 1 FROM jobs WHERE namespace = :ns AND id = :id"), {"ns": namespace, "id": job_id}
            ).first()
        return row is not None

    def job_for_register(self, namespace: str, job_id: str) -> tuple[Job | None, int]:
        """The job as registered now (without its derived status) and its stream's version, in
        one query: what a register compares against and appends after."""
        with self._connect() as conn:
            doc, version = conn.execute(
                text(
                    "SELECT (SELECT doc::text FROM jobs WHERE namespace = :ns AND id = :id), "
                    "(SELECT coalesce(max(version), 0) FROM events WHERE stream = :s)"
                ),
                {"ns": namespace, "id": job_id, "s": job_stream(namespace, job_id)},
            ).one()
        return (Job.model_validate_json(doc) if doc is not None else None), int(version)

    def _with_status(self, jobs: list[Job]) -> list[Job]:
        """The jobs with Status derived from their allocs and evals now."""
        if not jobs:
            return jobs
        with self._connect() as conn:
            return children.with_status(conn, jobs)

    def job_summaries(self, namespace: str, jobs: list[Job]) -> dict[str, JobSummary]:
        """Each job's summary by ID: its allocs counted by group and client status, and its
        children (by ParentID) by their status derived now."""
        if not jobs:
            return {}
        ids = [j.id for j in jobs]
        with self._connect() as conn:
            counts = children.alloc_counts(conn, namespace, ids)
            kids = children.children_of(conn, namespace, ids)
        allocs: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
        for job_id, group, client_status, n in counts:
            allocs[job_id].append((group, client_status, n))
        statuses: dict[str, list[str]] = defaultdict(list)
        for kid in self._with_status(kids):
            statuses[kid.parent_id].append(kid.status)
        return {j.id: job_summary(j, allocs[j.id], statuses[j.id]) for j in jobs}

    def job_children(self, namespace: str, job_id: str, limit: int = 10) -> list[Job]:
        """The job's newest children (dispatched or periodic launches), their Status derived,
        without their payload and groups."""
        with self._connect() as conn:
            kids = children.newest_children(conn, namespace, job_id, limit)
        return self._with_status(kids)

    def dispatched_with_token(self, namespace: str, job_id: str, token: str) -> tuple[Job | None, int]:
        """The job's child dispatched with idempotency `token`, and the token stream's version."""
        with self._connect() as conn:
            return children.dispatched_with_token(conn, namespace, job_id, token)

    def job_versions(self, namespace: str, job_id: str) -> list[Job]:
        docs = self._docs(
            "SELECT doc::text FROM job_versions WHERE namespace = :ns AND id = :id ORDER BY version DESC",
            ns=namespace,
            id=job_id,
        )
        return [Job.model_validate_json(d) for d in docs]

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None:
        docs = self._docs(
            "SELECT doc::text FROM job_versions WHERE namespace = :ns AND id = :id AND version = :v",
            ns=namespace,
            id=job_id,
            v=version,
        )
        return Job.model_validate_json(docs[0]) if docs else None

    def job_stream_version(self, namespace: str, job_id: str) -> int:
        return self.store.stream_version(job_stream(namespace, job_id))

    def scaling_events(self, namespace: str, job_id: str) -> JobScalingEvents | None:
        docs = self._docs(
            "SELECT doc::text FROM scaling_events WHERE namespace = :ns AND job_id = :id",
            ns=namespace,
            id=job_id,
        )
        return JobScalingEvents.model_validate_json(docs[0]) if docs else None

    def variable(self, namespace: str, path: str) -> VariableEncrypted | None:
        docs = self._docs(
            "SELECT doc::text FROM variables WHERE namespace = :ns AND path = :path", ns=namespace, path=path
        )
        return VariableEncrypted.model_validate_json(docs[0]) if docs else None

    def variables(
        self, namespace: str, prefix: str = "", *, start: str = "", limit: int = 0
    ) -> list[VariableEncrypted]:
        """Variables by path prefix; namespace `*`: every one's. Ordered and paged as Nomad's,
        by the token `<namespace>.<path>` (neither holds a dot): `start` is the first page's."""
        token = "(namespace || '.' || path) COLLATE \"C\""
        where = ["path LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        if namespace != "*":
            where.append("namespace = :ns")
            params["ns"] = namespace
        if start:
            where.append(f"{token} >= :start")
            params["start"] = start
        tail = ""
        if limit:
            params["limit"] = limit
            tail = " LIMIT :limit"
        docs = self._docs(
            f"SELECT doc::text FROM variables WHERE {' AND '.join(where)} ORDER BY {token}{tail}", **params
        )
        return [VariableEncrypted.model_validate_json(d) for d in docs]

    def all_variables(self) -> list[VariableEncrypted]:
        return self.variables("*")

    def variable_stream_version(self, namespace: str, path: str) -> int:
        return self.store.stream_version(variable_stream(namespace, path))

    def allocs(self, *, namespace: str | None = None, job_id: str | None = None, node_id: str | None = None,
               eval_id: str | None = None, prefix: str = "", start: str = "", limit: int = 0) -> list[Allocation]:  # fmt: skip
        where = ["id LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        for col, val in (
            ("namespace", namespace),
            ("job_id", job_id),
            ("node_id", node_id),
            ("eval_id", eval_id),
        ):
            if val is not None:
                where.append(f"{col} = :{col}")
                params[col] = val
        tail = _page(where, params, start, limit)
        docs = self._docs(
            f"SELECT doc::text FROM allocs WHERE {' AND '.join(where)} ORDER BY id{tail}", **params
        )
        return [Allocation.model_validate_json(d) for d in docs]

    def job_allocs_at(self, namespace: str, job_id: str) -> tuple[int, list[Allocation] | None]:
        """The log's index and the job's allocs (None if there is no such job), in one statement:
        one round trip instead of three, and both from one snapshot. A client watching its job
        with blocking queries reads this every time the log moves."""
        with self._connect() as conn:
            index, exists, docs = conn.execute(
                text(
                    "SELECT (SELECT coalesce(max(position), 0) FROM events), "
                    "EXISTS (SELECT 1 FROM jobs WHERE namespace = :ns AND id = :id), "
                    "(SELECT string_agg(doc, ',' ORDER BY id) FROM allocs "
                    "WHERE namespace = :ns AND job_id = :id)"
                ),
                {"ns": namespace, "id": job_id},
            ).one()
        if not exists:
            return int(index), None
        return int(index), _ALLOCS.validate_json(f"[{docs or ''}]")

    def alloc_changes(self, since: int, node_prefix: str) -> list[Allocation]:
        """Allocs written after log position `since` on nodes whose ID starts with `node_prefix`."""
        docs = self._docs(
            "SELECT doc::text FROM allocs WHERE modify_index > :since AND node_id LIKE :p ORDER BY modify_index",
            since=since,
            p=_like_prefix(node_prefix),
        )
        return [Allocation.model_validate_json(d) for d in docs]

    def alloc(self, alloc_id: str) -> Allocation | None:
        docs = self._docs("SELECT doc::text FROM allocs WHERE id = :id", id=alloc_id)
        return Allocation.model_validate_json(docs[0]) if docs else None

    def evals(
        self,
        *,
        namespace: str | None = None,
        job_id: str | None = None,
        prefix: str = "",
        start: str = "",
        limit: int = 0,
    ) -> list[Evaluation]:
        where = ["id LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        if namespace is not None:
            where.append("namespace = :ns")
            params["ns"] = namespace
        if job_id is not None:
            where.append("job_id = :job")
            params["job"] = job_id
        tail = _page(where, params, start, limit)
        docs = self._docs(
            f"SELECT doc::text FROM evals WHERE {' AND '.join(where)} ORDER BY id{tail}", **params
        )
        return [Evaluation.model_validate_json(d) for d in docs]

    def eval_count(self, namespace: str, prefix: str = "") -> int:
        """How many evals there are in `namespace` ("*": all) whose ID starts with `prefix`."""
        where = ["id LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        if namespace != "*":
            where.append("namespace = :ns")
            params["ns"] = namespace
        with self._connect() as conn:
            return int(
                conn.execute(
                    text(f"SELECT count(*) FROM evals WHERE {' AND '.join(where)}"), params
                ).scalar_one()
            )

    def eval(self, eval_id: str) -> Evaluation | None:
        docs = self._docs("SELECT doc::text FROM evals WHERE id = :id", id=eval_id)
        return Evaluation.model_validate_json(docs[0]) if docs else None

    def nodes(self, prefix: str = "", *, start: str = "", limit: int = 0) -> list[Node]:
        where = ["id LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        tail = _page(where, params, start, limit)
        docs = self._docs(
            f"SELECT doc::text FROM nodes WHERE {' AND '.join(where)} ORDER BY id{tail}", **params
        )
        return [Node.model_validate_json(d) for d in docs]

    def node(self, node_id: str) -> Node | None:
        docs = self._docs("SELECT doc::text FROM nodes WHERE id = :id", id=node_id)
        return Node.model_validate_json(docs[0]) if docs else None

    def deployments(self, namespace: str, job_id: str) -> list[Deployment]:
        docs = self._docs(
            "SELECT doc::text FROM deployments WHERE namespace = :ns AND job_id = :job ORDER BY create_index DESC",
            ns=namespace,
            job=job_id,
        )
        return [Deployment.model_validate_json(d) for d in docs]

    def deployment(self, deployment_id: str) -> Deployment | None:
        docs = self._docs("SELECT doc::text FROM deployments WHERE id = :id", id=deployment_id)
        return Deployment.model_validate_json(docs[0]) if docs else None

    def all_deployments(self, prefix: str = "", namespace: str = ALL_NAMESPACES) -> list[Deployment]:
        """Deployments by ID prefix, of `namespace` (`*`: every one's), the newest first."""
        where, params = ["id LIKE :p"], {"p": _like_prefix(prefix)}
        if namespace != ALL_NAMESPACES:
            where.append("namespace = :ns")
            params["ns"] = namespace
        docs = self._docs(
            f"SELECT doc::text FROM deployments WHERE {' AND '.join(where)} ORDER BY create_index DESC",
            **params,
        )
        return [Deployment.model_validate_json(d) for d in docs]

    def deployment_allocs(self, dep: Deployment) -> list[Allocation]:
        docs = self._docs(
            "SELECT doc::text FROM allocs WHERE namespace = :ns AND job_id = :job "
            "AND CAST(doc AS json)->>'DeploymentID' = :id ORDER BY id",
            ns=dep.namespace,
            job=dep.job_id,
            id=dep.id,
        )
        return [Allocation.model_validate_json(d) for d in docs]

    def live_jobs_on(self, node_id: str) -> list[Job]:
        """The jobs with a live alloc on the node (desired to run, not finished by the client)."""
        return [
            Job.model_validate_json(d)
            for d in self._docs(
                "SELECT doc::text FROM jobs WHERE (namespace, id) IN (SELECT namespace, job_id FROM allocs "
                "WHERE node_id = :n AND desired_status = 'run' "
                "AND client_status NOT IN ('complete', 'failed', 'lost'))",
                n=node_id,
            )
        ]

    def allocs_by_id(self, alloc_ids: list[str]) -> dict[str, Allocation]:
        docs = self._docs("SELECT doc::text FROM allocs WHERE id = ANY(:ids)", ids=alloc_ids)
        allocs = (Allocation.model_validate_json(d) for d in docs)
        return {a.id: a for a in allocs}

    def node_count(self) -> int:
        with self._connect() as conn:
            return int(conn.exec_driver_sql("SELECT count(*) FROM nodes").scalar_one())

    def nodes_by_id(self, node_ids: list[str]) -> dict[str, Node]:
        docs = self._docs("SELECT doc::text FROM nodes WHERE id = ANY(:ids)", ids=node_ids)
        nodes = (Node.model_validate_json(d) for d in docs)
        return {n.id: n for n in nodes}

    def node_statuses(self, node_ids: list[str]) -> dict[str, str]:
        """The status of each of `node_ids` that exists (heartbeats read only this: decoding
        every node of a 5,000-node batch was most of the API's work under load)."""
        with self._connect() as conn:
            rows = conn.execute(
                text("SELECT id, doc->>'Status' FROM nodes WHERE id = ANY(:ids)"), {"ids": node_ids}
            ).all()
        return {r[0]: r[1] for r in rows}

    def system_jobs(self) -> list[Job]:
        docs = self._docs(
            "SELECT doc::text FROM jobs WHERE doc->>'Type' IN ('system', 'sysbatch') AND NOT (doc->>'Stop')::boolean"
        )
        return [Job.model_validate_json(d) for d in docs]

    def active_deployment(self, namespace: str, job_id: str) -> Deployment | None:
        """The job's newest deployment, if it has not ended."""
        deps = self.deployments(namespace, job_id)
        return deps[0] if deps and deps[0].active() else None

    def job_allocs(self, namespace: str, job_id: str) -> list[Allocation]:
        return self.allocs(namespace=namespace, job_id=job_id)

    def job_restart(self, restart_id: str) -> JobRestart | None:
        docs = self._docs("SELECT doc::text FROM job_restarts WHERE id = :id", id=restart_id)
        return JobRestart.model_validate_json(docs[0]) if docs else None

    def job_restarts_of(self, namespace: str, job_id: str) -> list[JobRestart]:
        """The job's restarts, the newest first."""
        docs = self._docs(
            "SELECT doc::text FROM job_restarts WHERE namespace = :ns AND job_id = :job ORDER BY create_index DESC",
            ns=namespace,
            job=job_id,
        )
        return [JobRestart.model_validate_json(d) for d in docs]

    def services(
        self, namespace: str | None, *, name: str = "", job_id: str = "", alloc_id: str = ""
    ) -> list[ServiceRegistration]:
        """Service registrations in ID order: of `namespace` (None: every one), and of the
        service `name`, the job or the alloc where given."""
        where, params = ["true"], {}
        for col, value in (("namespace", namespace), ("service_name", name), ("job_id", job_id),
                           ("alloc_id", alloc_id)):  # fmt: skip
            if value:
                where.append(f"{col} = :{col}")
                params[col] = value
        docs = self._docs(
            f"SELECT doc::text FROM service_registrations WHERE {' AND '.join(where)} ORDER BY id", **params
        )
        return [ServiceRegistration.model_validate_json(d) for d in docs]

    def service(self, service_id: str) -> ServiceRegistration | None:
        docs = self._docs("SELECT doc::text FROM service_registrations WHERE id = :id", id=service_id)
        return ServiceRegistration.model_validate_json(docs[0]) if docs else None

    def restart_stream_version(self, namespace: str, job_id: str) -> int:
        return self.store.stream_version(restart_stream(namespace, job_id))
