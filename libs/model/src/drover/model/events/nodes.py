"""A node's events: registered, its status, eligibility and drain, deregistered."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.events.base import Event, Reads, node_stream
from drover.model.events.operatorconfig import ensure_pool
from drover.model.events.services import drop_services_of
from drover.model.node import NODE_STATUS_DOWN, DrainStrategy, Node, compute_class

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


class NodeRegistered(Event):
    """A node registered, or registered again (its computed class filled in); its pool is
    created if there is none yet, as Nomad's node upsert does. `secret_hash` is the keyed hash
    of the node's SecretID (drover.runtime.nodesecrets), never the secret: what the node's
    client requests are checked against. Kept beside the node, not in it, so that no read or
    stream event of the node carries it."""

    type: Literal["NodeRegistered"] = "NodeRegistered"
    nomad_event_type: ClassVar[str | None] = "NodeRegistration"
    node: Node
    secret_hash: str = ""

    def stream(self) -> str:
        return node_stream(self.node.id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.node(self.node.id)
        update = {
            "computed_class": compute_class(self.node),
            "create_index": old.create_index if old else index,
            "modify_index": index,
        }
        ensure_pool(state, self.node.node_pool, index)
        state.upsert_node(self.node.model_copy(update=update))
        if self.secret_hash:
            state.set_node_secret_hash(self.node.id, self.secret_hash)

    def reads(self, r: Reads) -> None:
        r.nodes.append(self.node.id)
        r.node_pools.append(self.node.node_pool)


class NodeUpdate(Event):
    """A change to some of a node's fields; a node not (or no longer) known stays unknown."""

    node_id: str

    def stream(self) -> str:
        return node_stream(self.node_id)

    def reads(self, r: Reads) -> None:
        r.nodes.append(self.node_id)

    def update_node(self, state: StateWriter, index: int, **update: object) -> None:
        old = state.node(self.node_id)
        if old is not None:
            state.upsert_node(old.model_copy(update={**update, "modify_index": index}))


class NodeStatusUpdated(NodeUpdate):
    type: Literal["NodeStatusUpdated"] = "NodeStatusUpdated"
    nomad_event_type: ClassVar[str | None] = "NodeStreamEvent"
    status: str
    status_description: str = ""
    at: int = 0

    def apply_to(self, state: StateWriter, index: int) -> None:
        self.update_node(
            state,
            index,
            status=self.status,
            status_description=self.status_description,
            status_updated_at=self.at,
        )
        if self.status == NODE_STATUS_DOWN:
            drop_services_of(state, node_id=self.node_id)


class NodeEligibilityUpdated(NodeUpdate):
    type: Literal["NodeEligibilityUpdated"] = "NodeEligibilityUpdated"
    nomad_event_type: ClassVar[str | None] = "NodeEligibility"
    eligibility: str

    def apply_to(self, state: StateWriter, index: int) -> None:
        self.update_node(state, index, scheduling_eligibility=self.eligibility)


class NodeDrainUpdated(NodeUpdate):
    """A drain set or cleared; with an eligibility, the node's too."""

    type: Literal["NodeDrainUpdated"] = "NodeDrainUpdated"
    nomad_event_type: ClassVar[str | None] = "NodeDrain"
    drain_strategy: DrainStrategy | None = None
    eligibility: str = ""

    def apply_to(self, state: StateWriter, index: int) -> None:
        update: dict[str, object] = {"drain_strategy": self.drain_strategy}
        if self.eligibility:
            update["scheduling_eligibility"] = self.eligibility
        self.update_node(state, index, **update)


class NodeDeregistered(NodeUpdate):
    """A node purged: it leaves the state; its allocs are the scheduler's to find lost."""

    type: Literal["NodeDeregistered"] = "NodeDeregistered"
    nomad_event_type: ClassVar[str | None] = "NodeDeregistration"

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.delete_node(self.node_id)
        drop_services_of(state, node_id=self.node_id)

    def reads(self, r: Reads) -> None:
        pass  # deleted by its ID alone
