"""The list reads a console needs (`Reads`' part): pages of jobs, nodes, evaluations and allocs
filtered and ordered in SQL, so that a page costs the same at 10 jobs or 10,000; the counts of
the cluster's health; the log's latest entries. Pages are keyset-paged: a page starts after (or
ends before) the row a token names, never at an offset.

A job's Status is derived at read time (`drover.model.job.derive_job_status`); to filter on it
in SQL, `JOB_STATUS_SQL` derives it the same way (`tests/test_ui_pages.py` holds the two
equal)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sqlalchemy import text

from drover.model import Allocation, Deployment, Evaluation, Job, Node

if TYPE_CHECKING:
    from drover.runtime.store.eventstore import EventStore

T = TypeVar("T")
# A list's namespaces: one, `*` (every one), or those of a sequence (the ones an ACL token may
# read: none of them is none at all).
Namespaces = str | Sequence[str]
# How far back the log's latest entries are looked for among a token's streams: a page costs
# a bounded read however seldom its namespaces are written to.
RECENT_WINDOW = 2000

_LIVE_ALLOC = (
    "NOT (a.desired_status IN ('stop', 'evict') OR a.client_status IN ('complete', 'failed', 'lost'))"
)
_LIVE_EVAL = "e.status NOT IN ('complete', 'failed', 'canceled')"
_ALLOCS_OF = "FROM allocs a WHERE a.namespace = j.namespace AND a.job_id = j.id"
_EVALS_OF = "FROM evals e WHERE e.namespace = j.namespace AND e.job_id = j.id"


# derive_job_status in SQL, over the jobs row `j`: the job's own fields from its generated
# columns (type, stop, launches_children: no document parsed), each probe of its allocs and
# evals a scalar subquery (LIMIT 1) that the partial indexes allocs_live and evals_live answer
# alone. Not EXISTS, which the planner may turn into one hash of every live alloc: a page of 25
# jobs then reads 100,000 allocs instead of 25 index probes.
def _any(where: str) -> str:
    return f"(SELECT true {where} LIMIT 1) IS NOT NULL"


JOB_STATUS_SQL = (
    "CASE WHEN j.type = 'system' OR j.launches_children "
    "THEN CASE WHEN j.stop THEN 'dead' ELSE 'running' END "
    f"WHEN {_any(f'{_ALLOCS_OF} AND {_LIVE_ALLOC}')} THEN 'running' "
    f"WHEN {_any(f'{_EVALS_OF} AND {_LIVE_EVAL}')} THEN 'pending' "
    f"WHEN {_any(_ALLOCS_OF)} OR {_any(_EVALS_OF)} OR j.stop THEN 'dead' "
    "ELSE 'pending' END"
)
_NODE_STATUS = "coalesce(doc->>'Status', 'ready')"
_NODE_ELIGIBILITY = "coalesce(doc->>'SchedulingEligibility', 'eligible')"
_NODE_DRAINING = "jsonb_typeof(doc->'DrainStrategy') = 'object'"


@dataclass
class Page(Generic[T]):
    """One page of a list, and the tokens of the pages around it ("" where there is none)."""

    items: list[T]
    after: str = ""  # the next page starts after this token
    before: str = ""  # the previous page ends before this token


@dataclass
class LogEntry:
    position: int
    type: str
    stream: str
    recorded_at: datetime


@dataclass
class Health:
    """How many of each there are, by status: what the overview counts."""

    nodes: dict[str, int] = field(default_factory=dict)
    allocs: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    evals: dict[str, int] = field(default_factory=dict)
    deployments: dict[str, int] = field(default_factory=dict)


def _literal(fragment: str) -> str:
    return fragment.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")


def like_anywhere(fragment: str) -> str:
    """An ILIKE pattern matching `fragment` literally anywhere."""
    return "%" + _literal(fragment) + "%"


def like_prefix(fragment: str) -> str:
    """A LIKE pattern matching what starts with `fragment`."""
    return _literal(fragment) + "%"


def _namespace_where(column: str, namespaces: Namespaces, params: dict[str, Any], name: str) -> str:
    """The condition keeping `column` within `namespaces` ("" for every namespace)."""
    if isinstance(namespaces, str):
        if namespaces == "*":
            return ""
        params[name] = namespaces
        return f"{column} = :{name}"
    params[name] = list(namespaces)
    return f"{column} = ANY(:{name})"


def _paged(
    rows: list[tuple[str, Any]], limit: int, backwards: bool, started: bool, token: Any
) -> tuple[list[Any], str, str]:
    """(items, after, before) of a page read `limit + 1` rows deep; `backwards` when it was read
    in reverse order (a previous page), `started` when it began at a token (the first page
    did not: it has no previous one), `token` making each row's token."""
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    items = [r[1] for r in rows]
    if not items:
        return items, "", ""
    first, last = token(rows[0]), token(rows[-1])
    if backwards:
        return items, last, first if more else ""
    return items, last if more else "", first if started else ""


class ListReads:
    """Held by `Reads`, which provides the store."""

    store: EventStore

    def _rows(self, sql: str, params: dict[str, Any]) -> list[Any]:
        with self.store.reader.connect() as conn:
            return list(conn.execute(text(sql), params))

    def job_page(
        self,
        namespace: Namespaces,
        *,
        status: str = "",
        type_: str = "",
        search: str = "",
        after: str = "",
        before: str = "",
        limit: int = 25,
    ) -> Page[Job]:
        """Jobs by namespace and ID (`*`: every namespace), parents only (a periodic or
        dispatched child is listed under its parent), with their Status derived; `after` and
        `before` are `<namespace>/<id>` tokens (`job_ref`)."""
        # parent_id is a column with statistics: the planner walks the primary key (namespace,
        # id) and stops at the page, not read and sort every job.
        where = ["j.parent_id = ''"]
        params: dict[str, Any] = {"limit": limit + 1}
        if within := _namespace_where("j.namespace", namespace, params, "ns"):
            where.append(within)
        if type_:
            where.append("j.type = :type")
            params["type"] = type_
        if search:
            where.append("(j.id ILIKE :q OR j.doc->>'Name' ILIKE :q)")
            params["q"] = like_anywhere(search)
        backwards = bool(before) and not after
        if token := after or before:
            tns, _, tid = token.partition("/")
            where.append(f"(j.namespace, j.id) {'<' if backwards else '>'} (:tns, :tid)")
            params["tns"], params["tid"] = tns, tid
        order = "DESC" if backwards else "ASC"
        sql = (
            f"SELECT namespace, doc::text, status FROM (SELECT j.namespace, j.id, j.doc, {JOB_STATUS_SQL} AS status "
            f"FROM jobs j WHERE {' AND '.join(where)}) s "
            f"{'WHERE status = :status ' if status else ''}"
            f"ORDER BY namespace {order}, id {order} LIMIT :limit"
        )
        if status:
            params["status"] = status
        rows = []
        for _, doc, st in self._rows(sql, params):
            job = Job.model_validate_json(doc)
            rows.append((f"{job.namespace}/{job.id}", job.model_copy(update={"status": st})))
        items, nxt, prev = _paged(rows, limit, backwards, bool(token), lambda r: r[0])
        return Page(items, nxt, prev)

    def node_page(
        self,
        *,
        status: str = "",
        eligibility: str = "",
        search: str = "",
        after: str = "",
        before: str = "",
        limit: int = 50,
    ) -> Page[Node]:
        """Nodes by ID (the primary key's order: no document is read to order them, as Nomad's
        list); `status` may also be `draining`; tokens are node IDs."""
        where: list[str] = []
        params: dict[str, Any] = {"limit": limit + 1}
        if status == "draining":
            where.append(_NODE_DRAINING)
        elif status:
            where.append(f"{_NODE_STATUS} = :status")
            params["status"] = status
        if eligibility:
            where.append(f"{_NODE_ELIGIBILITY} = :elig")
            params["elig"] = eligibility
        if search:
            where.append("(id ILIKE :q OR doc->>'Name' ILIKE :q OR doc->>'Datacenter' ILIKE :q)")
            params["q"] = like_anywhere(search)
        backwards = bool(before) and not after
        if token := after or before:
            where.append(f"id {'<' if backwards else '>'} :token")
            params["token"] = token
        order = "DESC" if backwards else "ASC"
        sql = (
            f"SELECT id, doc::text FROM nodes {'WHERE ' + ' AND '.join(where) if where else ''} "
            f"ORDER BY id {order} LIMIT :limit"
        )
        rows = [(r[0], Node.model_validate_json(r[1])) for r in self._rows(sql, params)]
        items, nxt, prev = _paged(rows, limit, backwards, bool(token), lambda r: r[0])
        return Page(items, nxt, prev)

    def eval_page(
        self,
        *,
        namespace: Namespaces = "*",
        status: str = "",
        triggered_by: str = "",
        job: str = "",
        job_id: str = "",
        after: str = "",
        before: str = "",
        limit: int = 25,
    ) -> Page[Evaluation]:
        """Evaluations, the latest changed first (by ModifyIndex, a column: no document is read
        to order them), of the job `job_id`, or of the jobs whose ID holds `job`; tokens are
        eval IDs."""
        return self._newest_first(
            "evals",
            Evaluation,
            namespace,
            {"job_id": job_id, "status": status, "doc->>'TriggeredBy'": triggered_by},
            ("job_id ILIKE :q", like_anywhere(job)) if job else None,
            after,
            before,
            limit,
        )

    def alloc_page(
        self,
        *,
        namespace: Namespaces = "*",
        job_id: str = "",
        node_id: str = "",
        status: str = "",
        after: str = "",
        before: str = "",
        limit: int = 25,
    ) -> Page[Allocation]:
        """Allocs of a job or a node (or all), the latest changed first; `status` their
        ClientStatus."""
        return self._newest_first(
            "allocs",
            Allocation,
            namespace,
            {"job_id": job_id, "node_id": node_id, "client_status": status},
            None,
            after,
            before,
            limit,
        )

    def _newest_first(
        self,
        table: str,
        model: Any,
        namespace: Namespaces,
        equal: dict[str, str],
        extra: tuple[str, str] | None,
        after: str,
        before: str,
        limit: int,
    ) -> Page[Any]:
        where: list[str] = []
        params: dict[str, Any] = {"limit": limit + 1}
        if within := _namespace_where("namespace", namespace, params, "ns"):
            where.append(within)
        for i, (col, value) in enumerate(equal.items()):
            if value:
                where.append(f"{col} = :v{i}")
                params[f"v{i}"] = value
        if extra:
            where.append(extra[0])
            params["q"] = extra[1]
        backwards = bool(before) and not after
        if token := after or before:
            where.append(
                f"(modify_index, id) {'>' if backwards else '<'} (SELECT modify_index, id FROM {table} WHERE id = :token)"
            )
            params["token"] = token
        order = "ASC" if backwards else "DESC"
        sql = (
            f"SELECT id, doc::text FROM {table} {'WHERE ' + ' AND '.join(where) if where else ''} "
            f"ORDER BY modify_index {order}, id {order} LIMIT :limit"
        )
        rows = [(r[0], model.model_validate_json(r[1])) for r in self._rows(sql, params)]
        items, nxt, prev = _paged(rows, limit, backwards, bool(token), lambda r: r[0])
        return Page(items, nxt, prev)

    def health(self, namespaces: Namespaces = "*", *, nodes: bool = True) -> Health:
        """Nodes (unless not `nodes`), allocs (ClientStatus, live ones), jobs (by Type), evals
        and deployments of `namespaces` counted by status, in one round trip."""
        params: dict[str, Any] = {}
        within = _namespace_where("namespace", namespaces, params, "ns")
        also, where = (f"AND {within} ", f"WHERE {within} ") if within else ("", "")
        parts = []
        if nodes:
            parts += [
                f"SELECT 'nodes', CASE WHEN {_NODE_DRAINING} THEN 'draining' ELSE {_NODE_STATUS} END, count(*) "
                "FROM nodes GROUP BY 2",
                f"SELECT 'ineligible', {_NODE_ELIGIBILITY}, count(*) FROM nodes GROUP BY 2",
            ]
        parts += [
            f"SELECT 'allocs', client_status, count(*) FROM allocs WHERE desired_status = 'run' {also}GROUP BY 2",
            f"SELECT 'jobs', type, count(*) FROM jobs WHERE parent_id = '' {also}GROUP BY 2",
            f"SELECT 'evals', status, count(*) FROM evals {where}GROUP BY 2",
            f"SELECT 'deployments', doc->>'Status', count(*) FROM deployments {where}GROUP BY 2",
        ]
        h = Health()
        for kind, status, n in self._rows(" UNION ALL ".join(parts), params):
            if kind == "ineligible":
                if status == "ineligible":
                    h.nodes["ineligible"] = int(n)
                continue
            getattr(h, kind)[status or ""] = int(n)
        return h

    def blocked_evals(self, limit: int = 10, namespaces: Namespaces = "*") -> list[Evaluation]:
        """Blocked evaluations, the newest first: placements waiting for capacity."""
        return self.eval_page(namespace=namespaces, status="blocked", limit=limit).items

    def failed_allocs(self, limit: int = 10, namespaces: Namespaces = "*") -> list[Allocation]:
        """Failed allocs still desired to run (not yet replaced or stopped), the latest first."""
        params: dict[str, Any] = {"limit": limit}
        within = _namespace_where("namespace", namespaces, params, "ns")
        rows = self._rows(
            "SELECT doc::text FROM allocs WHERE client_status = 'failed' AND desired_status = 'run' "
            f"{'AND ' + within if within else ''} ORDER BY modify_index DESC LIMIT :limit",
            params,
        )
        return [Allocation.model_validate_json(r[0]) for r in rows]

    def down_nodes(self, limit: int = 10) -> list[Node]:
        rows = self._rows(
            f"SELECT doc::text FROM nodes WHERE {_NODE_STATUS} IN ('down', 'disconnected') "
            "ORDER BY modify_index DESC LIMIT :limit",
            {"limit": limit},
        )
        return [Node.model_validate_json(r[0]) for r in rows]

    def troubled_deployments(self, limit: int = 10, namespaces: Namespaces = "*") -> list[Deployment]:
        """Deployments that failed, or run with unhealthy allocs, the latest first."""
        params: dict[str, Any] = {"limit": limit}
        within = _namespace_where("namespace", namespaces, params, "ns")
        rows = self._rows(
            "SELECT doc::text FROM deployments WHERE (doc->>'Status' = 'failed' OR (doc->>'Status' = 'running' "
            "AND EXISTS (SELECT 1 FROM jsonb_each(coalesce(doc->'TaskGroups', '{}'::jsonb)) g "
            "WHERE coalesce((g.value->>'UnhealthyAllocs')::int, 0) > 0))) "
            f"{'AND ' + within if within else ''} ORDER BY modify_index DESC LIMIT :limit",
            params,
        )
        return [Deployment.model_validate_json(r[0]) for r in rows]

    def recent_log(self, limit: int = 15, streams: Sequence[str] | None = None) -> list[LogEntry]:
        """The log's latest entries (their type and stream, not their bodies); given `streams`
        (prefixes of stream names), the latest of those streams' among the last RECENT_WINDOW."""
        params: dict[str, Any] = {"limit": limit}
        where = ""
        if streams is not None:
            params["patterns"] = [like_prefix(p) for p in streams]
            params["window"] = RECENT_WINDOW
            where = (
                "WHERE stream LIKE ANY(:patterns) "
                "AND position > (SELECT coalesce(max(position), 0) FROM events) - :window "
            )
        rows = self._rows(
            f"SELECT position, type, stream, recorded_at FROM events {where}ORDER BY position DESC LIMIT :limit",
            params,
        )
        return [LogEntry(int(r[0]), r[1], r[2], r[3]) for r in rows]
