"""What the eval broker keeps of the cluster: a replica without allocs.

The broker reads evals, jobs (what an eval asks for), nodes (their class, to release blocked
evals) and, of allocs, only how many of a job's are live and, for an alloc that stops, its
node. A full replica decodes every placement of a plan into an alloc and indexes it by job
and node with its resource usage, and under load the broker heard an eval only after applying
the 1,000-alloc plans committed just before it (its register waited for their commit). This
replica reads a plan's placements as columns of IDs and nodes (`PlanSummary`) and keeps one
small record per alloc (`AllocRecord`): following a 1,000-alloc plan costs it about a fifth
of what it costs a full replica (`bench/codec.py`).

Everything else goes through the one reducer (drover.model.reducer) on an `InMemoryState`
that holds no allocs and no deployments (nothing the broker reads): the reducer finds no
alloc for an alloc event and changes only what else it carries (evals). What the summary
does with an alloc a plan writes follows the reducer (`keeps_client_status`); a test applies
the same log to both and compares.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import Field

from drover.model.alloc import (
    ALLOC_CLIENT_PENDING,
    ALLOC_DESIRED_RUN,
    CLIENT_TERMINAL,
    DESIRED_TERMINAL,
    Allocation,
)
from drover.model.base import NomadModel
from drover.model.deployment import Deployment
from drover.model.events import AllocsClientUpdated, Event, PlanApplied, decoder, keeps_client_status
from drover.model.reducer import apply
from drover.model.state import InMemoryState, JobKey


class AllocRecord(NamedTuple):
    """What the broker keeps of one alloc."""

    job: JobKey
    node_id: str
    desired_status: str
    client_status: str

    def terminal_status(self) -> bool:
        """As `Allocation.terminal_status`: desired stop/evict, or the client finished it."""
        return self.desired_status in DESIRED_TERMINAL or self.client_status in CLIENT_TERMINAL


class AllocSummary(NomadModel):
    """An alloc as the broker decodes it: every other member is skipped."""

    id: str = ""
    namespace: str = "default"
    job_id: str = ""
    node_id: str = ""
    desired_status: str = ALLOC_DESIRED_RUN
    client_status: str = ALLOC_CLIENT_PENDING


class PlacementsSummary(NomadModel):
    """A plan's placements in columns (drover.model.placements), the metrics skipped."""

    template: AllocSummary = Field(default_factory=AllocSummary)
    columns: dict[str, list[Any]] = Field(default_factory=dict)


_MEMBERS = ("ID", "Namespace", "JobID", "NodeID", "DesiredStatus", "ClientStatus")


class PlanSummary(Event):
    """`PlanApplied` as the broker decodes it."""

    type: Literal["PlanApplied"] = "PlanApplied"
    decoding_of: ClassVar[builtins.type[Event] | None] = PlanApplied
    eval_id: str
    allocs: list[AllocSummary] = Field(default_factory=list)
    stopped: list[AllocSummary] = Field(default_factory=list)
    preempted: list[AllocSummary] = Field(default_factory=list)
    placements: PlacementsSummary | None = None

    def stream(self) -> str:
        return f"plan:{self.eval_id}"

    def written(self) -> Iterator[tuple[str, str, str, str, str, str]]:
        """(id, namespace, job, node, desired, client) of every alloc the plan writes, in the
        reducer's order: stopped, preempted, then placed and updated."""
        for a in (*self.stopped, *self.preempted, *self.allocs):
            yield a.id, a.namespace, a.job_id, a.node_id, a.desired_status, a.client_status
        p = self.placements
        if p is None or "ID" not in p.columns:
            return
        n = len(p.columns["ID"])
        t = p.template
        shared = (t.id, t.namespace, t.job_id, t.node_id, t.desired_status, t.client_status)
        columns = [p.columns.get(name) or [value] * n for name, value in zip(_MEMBERS, shared, strict=True)]
        yield from zip(*columns, strict=True)


def decode_for_broker(data: bytes | str) -> Event:
    """A stored event as the broker keeps it (plans as `PlanSummary`)."""
    event: Event = decoder(PlanSummary).validate_json(data)
    return event


class BrokerState(InMemoryState):
    """Nodes, jobs and evals as any replica holds them; allocs as `AllocRecord`s, with each
    job's count of live ones; no deployments."""

    def __init__(self) -> None:
        super().__init__()
        self.records: dict[str, AllocRecord] = {}
        self._live: dict[JobKey, int] = {}

    def live_allocs(self, namespace: str, job_id: str) -> int:
        """How many of the job's allocs are not terminal."""
        return self._live.get((namespace, job_id), 0)

    def record(self, alloc_id: str) -> AllocRecord | None:
        return self.records.get(alloc_id)

    def put(self, alloc_id: str, rec: AllocRecord) -> None:
        old = self.records.get(alloc_id)
        if old is not None and not old.terminal_status():
            self._live[old.job] -= 1
        self.records[alloc_id] = rec
        if not rec.terminal_status():
            self._live[rec.job] = self._live.get(rec.job, 0) + 1

    def write_plan(self, plan: PlanSummary) -> None:
        """The plan's allocs as the reducer writes them: a plan sets the client status of an
        alloc it places, and of one the state holds only where the reducer lets it."""
        records, live, new = self.records, self._live, AllocRecord._make
        key: JobKey = ("", "")
        for alloc_id, namespace, job_id, node_id, desired, client in plan.written():
            if key[0] != namespace or key[1] != job_id:
                key = (namespace, job_id)
            old = records.get(alloc_id)
            if old is not None:
                if keeps_client_status(self, old.node_id, client):
                    client = old.client_status
                self.put(alloc_id, new((key, node_id, desired, client)))
                continue
            # A new alloc (most of what a plan writes): `put` without an old record.
            records[alloc_id] = new((key, node_id, desired, client))
            if desired not in DESIRED_TERMINAL and client not in CLIENT_TERMINAL:
                live[key] = live.get(key, 0) + 1

    def client_updated(self, event: AllocsClientUpdated) -> None:
        for u in event.updates:
            old = self.records.get(u.id)
            if old is not None:
                self.put(u.id, old._replace(client_status=u.client_status))

    # The reducer's alloc writes reach here only from a full alloc: kept as a record.
    def upsert_alloc(self, alloc: Allocation) -> None:
        rec = AllocRecord(
            (alloc.namespace, alloc.job_id), alloc.node_id, alloc.desired_status, alloc.client_status
        )
        self.put(alloc.id, rec)

    def upsert_deployment(self, dep: Deployment) -> None:
        pass  # the broker reads no deployment

    # What the garbage collector's events read and delete, of the records.
    def alloc_statuses(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        found = ((i, self.records.get(i)) for i in ids)
        return {i: (r.desired_status, r.client_status) for i, r in found if r is not None}

    def delete_allocs(self, ids: Sequence[str]) -> None:
        for alloc_id in ids:
            old = self.records.pop(alloc_id, None)
            if old is not None and not old.terminal_status():
                self._live[old.job] -= 1


def apply_for_broker(state: BrokerState, position: int, event: Event) -> None:
    """`reducer.apply` for a `BrokerState`: plans and client updates go to its records, the
    rest through the reducer (which finds no alloc to change in an alloc event)."""
    if isinstance(event, PlanSummary):
        state.bump(position)
        state.write_plan(event)
        return
    if isinstance(event, AllocsClientUpdated):
        state.client_updated(event)
    apply(state, position, event)
