"""The namespace catalogue's events: a namespace written (created or changed) and deleted.
Nomad's event stream has no topic for namespaces, so none is derived from them. `default`
exists without an event (drover.model.namespace.builtin): its first write keeps its
CreateIndex 1."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.events.base import Event, Reads
from drover.model.namespace import Namespace

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


def namespace_stream(name: str) -> str:
    """A namespace's stream: a write or deletion decided on what another changed meanwhile is
    decided again."""
    return f"namespace:{name}"


class NamespaceUpserted(Event):
    """A namespace written whole (Nomad's NamespaceUpsertRequest); its indexes are the log's."""

    type: Literal["NamespaceUpserted"] = "NamespaceUpserted"
    nomad_event_type: ClassVar[str | None] = None
    namespace: Namespace

    def stream(self) -> str:
        return namespace_stream(self.namespace.name)

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.namespace(self.namespace.name)
        created = old.create_index if old is not None else index
        state.upsert_namespace(
            self.namespace.model_copy(update={"create_index": created, "modify_index": index})
        )

    def reads(self, r: Reads) -> None:
        pass  # the namespace: one row, read when asked for


class NamespaceDeleted(Event):
    """A namespace deleted (Nomad's NamespaceDeleteRequest): it leaves the catalogue; what is
    left of its jobs (dead ones) stays until collected."""

    type: Literal["NamespaceDeleted"] = "NamespaceDeleted"
    nomad_event_type: ClassVar[str | None] = None
    name: str

    def stream(self) -> str:
        return namespace_stream(self.name)

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.delete_namespace(self.name)

    def reads(self, r: Reads) -> None:
        pass
