"""The API's reads of the namespace catalogue (`Reads`' part): a namespace by name (`default`
even before it was written), the list by name prefix, and what a namespace still holds that
keeps it from being deleted. Also the page token of job lists, which Nomad writes as
`<namespace>.<id>` (a namespace name holds no dot)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from drover.model.events import namespace_stream
from drover.model.job import JOB_STATUS_DEAD
from drover.model.namespace import ALL_NAMESPACES, Namespace, builtin, default_namespace, in_regions, matching

if TYPE_CHECKING:
    from drover.model import Job
    from drover.model.summary import JobSummary
    from drover.runtime.store.eventstore import EventStore


def job_token(job: Job) -> str:
    """The page token of a job list that starts at `job` (Nomad's NamespaceIDTokenizer)."""
    return f"{job.namespace}.{job.id}"


def split_job_token(token: str, namespace: str) -> tuple[str, str]:
    """(namespace, ID) of a job list's page token in a read of `namespace` (`*`: every one);
    a token without the namespace (an ID, as Drover wrote them before) is the ID alone."""
    ns, dot, job_id = token.partition(".")
    if dot and (namespace == ALL_NAMESPACES or ns == namespace):
        return ns, job_id
    return ("" if namespace == ALL_NAMESPACES else namespace), token


class NamespaceReads:
    """Held by `Reads`, which provides the store and the document query."""

    store: EventStore

    def _docs(self, sql: str, **params: Any) -> list[str]:
        raise NotImplementedError  # Reads'

    def jobs(self, namespace: str, prefix: str = "", *, start: str = "", limit: int = 0) -> list[Job]:
        raise NotImplementedError  # Reads'

    def job_summaries(self, namespace: str, jobs: list[Job]) -> dict[str, JobSummary]:
        raise NotImplementedError  # Reads'

    def namespace(self, name: str) -> Namespace | None:
        docs = self._docs("SELECT doc::text FROM namespaces WHERE name = :n", n=name)
        return Namespace.model_validate_json(docs[0]) if docs else builtin(name)

    def namespaces(self, prefix: str = "") -> list[Namespace]:
        """Every namespace whose name starts with `prefix`, by name."""
        found = {
            n.name: n
            for n in (
                Namespace.model_validate_json(d) for d in self._docs("SELECT doc::text FROM namespaces")
            )
        }
        found.setdefault(default_namespace().name, default_namespace())
        return matching(list(found.values()), prefix)

    def namespace_stream_version(self, name: str) -> int:
        return self.store.stream_version(namespace_stream(name))

    def namespace_holdings(self, name: str) -> list[str]:
        """What the namespace still holds that Nomad refuses to delete it with, in its words:
        jobs not dead, allocs not terminal on their client, variables."""
        out = []
        if any(j.status != JOB_STATUS_DEAD for j in self.jobs(name)):
            out.append(in_regions(name, "non-terminal jobs"))
        with self.store.reader.connect() as conn:
            allocs, variables = conn.execute(
                text(
                    "SELECT EXISTS (SELECT 1 FROM allocs WHERE namespace = :ns "
                    "AND client_status NOT IN ('complete', 'failed', 'lost')), "
                    "EXISTS (SELECT 1 FROM variables WHERE namespace = :ns)"
                ),
                {"ns": name},
            ).one()
        if allocs:
            out.append(in_regions(name, "non-terminal allocations"))
        if variables:
            out.append(in_regions(name, "variables associated with it"))
        return out

    def summaries_by_job(self, jobs: list[Job]) -> dict[tuple[str, str], JobSummary]:
        """Each job's summary by (namespace, ID), the jobs of any namespaces."""
        by_namespace: dict[str, list[Job]] = defaultdict(list)
        for j in jobs:
            by_namespace[j.namespace].append(j)
        return {
            (ns, job_id): summary
            for ns, group in by_namespace.items()
            for job_id, summary in self.job_summaries(ns, group).items()
        }
