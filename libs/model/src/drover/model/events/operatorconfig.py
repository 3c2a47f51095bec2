"""What an operator sets for the whole cluster: the scheduler configuration (Nomad's has no
event stream topic) and the node pools (Nomad's NodePool topic). A node registering into a
pool nobody created creates it (drover.model.events.nodes), as Nomad's node upsert does."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.events.base import Event, Reads
from drover.model.nodepool import NodePool
from drover.model.schedulerconfig import SchedulerConfiguration

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

# The scheduler configuration's one stream: a check-and-set appends after the version it read.
SCHEDULER_CONFIG_STREAM = "operator:scheduler"


def node_pool_stream(name: str) -> str:
    return f"nodepool:{name}"


class SchedulerConfigUpdated(Event):
    """The scheduler configuration set whole (Nomad's SchedulerSetConfiguration)."""

    type: Literal["SchedulerConfigUpdated"] = "SchedulerConfigUpdated"
    nomad_event_type: ClassVar[str | None] = None
    config: SchedulerConfiguration

    def stream(self) -> str:
        return SCHEDULER_CONFIG_STREAM

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.stored_scheduler_config()
        created = old.create_index if old is not None else index
        state.set_scheduler_config(
            self.config.model_copy(update={"create_index": created, "modify_index": index})
        )

    def reads(self, r: Reads) -> None:
        pass  # the configuration: one row, read when asked for


class NodePoolUpserted(Event):
    """A node pool created or written again by an operator (never a built-in one)."""

    type: Literal["NodePoolUpserted"] = "NodePoolUpserted"
    nomad_event_type: ClassVar[str | None] = "NodePoolUpserted"
    pool: NodePool

    def stream(self) -> str:
        return node_pool_stream(self.pool.name)

    def apply_to(self, state: StateWriter, index: int) -> None:
        upsert_pool(state, self.pool, index)

    def reads(self, r: Reads) -> None:
        r.node_pools.append(self.pool.name)


class NodePoolDeleted(Event):
    type: Literal["NodePoolDeleted"] = "NodePoolDeleted"
    nomad_event_type: ClassVar[str | None] = "NodePoolDeleted"
    name: str

    def stream(self) -> str:
        return node_pool_stream(self.name)

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.delete_node_pool(self.name)

    def reads(self, r: Reads) -> None:
        pass  # deleted by its name alone


def upsert_pool(state: StateWriter, pool: NodePool, index: int) -> None:
    """Write `pool` at `index`, keeping its CreateIndex; the built-in pools are never written."""
    old = state.node_pool(pool.name)
    if old is not None and old.is_builtin():
        return
    created = old.create_index if old is not None else index
    state.upsert_node_pool(pool.model_copy(update={"create_index": created, "modify_index": index}))


def ensure_pool(state: StateWriter, name: str, index: int) -> None:
    """Create pool `name` if there is none (what a node registering into it does)."""
    if name and state.node_pool(name) is None:
        state.upsert_node_pool(NodePool(name=name, create_index=index, modify_index=index))
