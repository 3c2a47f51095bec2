"""Service registrations' events (Nomad's native service discovery): a client registers the
services of its running allocs and removes them when they stop; an operator removes one by
ID. The servers also drop a node's when it goes down and an alloc's when it ends
(`drop_services_of`, called by those events' effects)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from drover.model.events.base import Event, Reads
from drover.model.serviceregistration import ServiceRegistration

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


def services_stream(node_id: str) -> str:
    return f"services:{node_id}" if node_id else "services"


class ServicesRegistered(Event):
    """A client registered (or registered again) services of its allocs; one whose alloc is
    unknown or has ended is not kept, and one registered as it already is changes nothing."""

    type: Literal["ServicesRegistered"] = "ServicesRegistered"
    nomad_event_type: ClassVar[str | None] = "ServiceRegistration"
    node_id: str = ""
    services: list[ServiceRegistration] = Field(default_factory=list)

    def stream(self) -> str:
        return services_stream(self.node_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        for reg in self.services:
            alloc = state.alloc(reg.alloc_id)
            if alloc is None or alloc.client_terminal():
                continue
            old = state.service(reg.id)
            if old is not None and old.same_as(reg):
                continue
            created = old.create_index if old is not None else index
            state.upsert_service(reg.model_copy(update={"create_index": created, "modify_index": index}))

    def reads(self, r: Reads) -> None:
        r.allocs.extend(s.alloc_id for s in self.services)


class ServicesDeregistered(Event):
    """Registrations removed by ID: a client's, for allocs that stopped, or an operator's."""

    type: Literal["ServicesDeregistered"] = "ServicesDeregistered"
    nomad_event_type: ClassVar[str | None] = "ServiceDeregistration"
    node_id: str = ""
    ids: list[str] = Field(default_factory=list)

    def stream(self) -> str:
        return services_stream(self.node_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        for service_id in self.ids:
            state.delete_service(service_id)

    def reads(self, r: Reads) -> None:
        pass  # deleted by their IDs alone


def drop_services_of(state: StateWriter, *, alloc_ids: Sequence[str] = (), node_id: str = "") -> None:
    """Remove the registrations of allocs that ended, or of a node that went down (the servers'
    own clean-up: a client that died cannot deregister)."""
    if alloc_ids or node_id:
        state.delete_services_of(alloc_ids, node_id)
