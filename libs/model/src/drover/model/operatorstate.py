"""The in-memory state's part the operator sets and the scheduler reads: the scheduler
configuration (Nomad's default until one is set) and the node pools (the built-in `all` and
`default` are constants, never stored). `InMemoryState`'s part (drover.model.state)."""

from __future__ import annotations

from drover.model.nodepool import NodePool, builtin_pool, effective_config
from drover.model.schedulerconfig import DEFAULT_SCHEDULER_CONFIGURATION, SchedulerConfiguration


class OperatorState:
    def init_operator(self) -> None:
        self._scheduler_config: SchedulerConfiguration | None = None
        # Node pools by name, the built-in ones aside.
        self.node_pools: dict[str, NodePool] = {}

    def scheduler_config(self) -> SchedulerConfiguration:
        """The configuration set last, or Nomad's default."""
        return self._scheduler_config or DEFAULT_SCHEDULER_CONFIGURATION

    def stored_scheduler_config(self) -> SchedulerConfiguration | None:
        """The configuration set last; None before any was."""
        return self._scheduler_config

    def set_scheduler_config(self, config: SchedulerConfiguration) -> None:
        self._scheduler_config = config

    def node_pool(self, name: str) -> NodePool | None:
        return builtin_pool(name) or self.node_pools.get(name)

    def upsert_node_pool(self, pool: NodePool) -> None:
        self.node_pools[pool.name] = pool

    def delete_node_pool(self, name: str) -> None:
        self.node_pools.pop(name, None)

    def config_for_pool(self, name: str) -> SchedulerConfiguration:
        """The scheduler configuration a job of pool `name` is placed with."""
        return effective_config(self.scheduler_config(), self.node_pool(name))
