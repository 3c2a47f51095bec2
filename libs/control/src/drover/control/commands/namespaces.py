"""Namespace commands (Nomad's Namespace.UpsertNamespaces and DeleteNamespaces): a namespace
written whole, and deleted, decided as Nomad decides them. Each appends after the version of
the namespace's stream it read, so a write and a deletion decided on one read cannot both land.

A register is admitted to its namespace when it is decided (drover.control.commands.jobs.prepare)
and appends to its job's stream alone: one decided while its namespace is being deleted may
still land (Nomad's state store checks again as it applies; a reducer cannot refuse). The job
is then in a namespace the catalogue no longer lists, read, stopped and purged by its name as
any other, until the namespace is written again. Serializing every register of a namespace on
its stream would make concurrent registers conflict instead."""

from __future__ import annotations

from typing import Protocol

from drover.control.change import Change
from drover.control.errors import Invalid, NotFound
from drover.model.events import NamespaceDeleted, NamespaceUpserted, NewEvent
from drover.model.namespace import DEFAULT_NAMESPACE, Namespace, go_quote, problems


class NamespaceReads(Protocol):
    def namespace(self, name: str) -> Namespace | None: ...

    def namespace_stream_version(self, name: str) -> int: ...

    def namespace_holdings(self, name: str) -> list[str]: ...


def upsert(reads: NamespaceReads, ns: Namespace) -> Change:
    """Write `ns` whole (what it leaves out is cleared, as Nomad's upsert does)."""
    found = problems(ns)
    if found:
        raise Invalid.of(found, f"Invalid namespace {go_quote(ns.name)}:")
    written = ns.model_copy(update={"create_index": 0, "modify_index": 0})
    return Change.of(
        [NewEvent(NamespaceUpserted(namespace=written), reads.namespace_stream_version(ns.name))]
    )


def delete(reads: NamespaceReads, name: str) -> Change:
    """Delete the namespace: never `default`, nor one that still holds jobs not dead, allocs
    not terminal or variables (every such refusal listed)."""
    if name == DEFAULT_NAMESPACE:
        raise Invalid("can not delete default namespace")
    if reads.namespace(name) is None:
        raise NotFound("namespace not found")
    held = reads.namespace_holdings(name)
    if held:
        raise Invalid.of(held)
    return Change.of([NewEvent(NamespaceDeleted(name=name), reads.namespace_stream_version(name))])
