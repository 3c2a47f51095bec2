"""A task group's ports within one eval: the nodes where they collide (blocked), kept current
from the node table's change log, and the ports given on the node a placement chose."""

from __future__ import annotations

import random

import numpy as np

from drover.model.job import TaskGroup
from drover.model.network import AllocatedPortMapping
from drover.scheduler.netindex import PortAsk, group_network
from drover.scheduler.nodetable import NodeTable
from drover.scheduler.rank import BoolArray


class GroupPorts:
    """Only rows where a port may be taken are looked at (`NodeTable.port_rows`); everywhere
    else the group's ports are free."""

    def __init__(self, table: NodeTable, tg: TaskGroup, seed: str) -> None:
        self.table = table
        self.network = group_network(tg.networks)
        self.ask = PortAsk.of(self.network) if self.network is not None else None
        self.active = self.network is not None and bool(self.network.ports())
        self.blocked: BoolArray = np.zeros(len(table), dtype=bool)
        self._seen = len(table.changes)
        # Seeded by the eval: the same eval draws the same ports.
        self._rng = random.Random(seed)
        if self.active:
            for row in table.port_rows().tolist():
                self.check(row)

    def check(self, row: int) -> str | None:
        """Why the ports do not fit on the row's node now (None if they do); the row is
        blocked or freed accordingly."""
        assert self.ask is not None
        reason = self.table.network_index(row).collision(self.ask)
        self.blocked[row] = reason is not None
        return reason

    def refresh(self) -> None:
        """Check again the rows the plan changed since the last look."""
        log = self.table.changes
        if self.active and len(log) > self._seen:
            for row in set(log[self._seen :]):
                self.check(row)
        self._seen = len(log)

    def assign(self, row: int) -> tuple[list[AllocatedPortMapping], str] | None:
        """The ports given on the row's node and their address; None (the row blocked) if they
        cannot be."""
        assert self.ask is not None
        got = self.table.network_index(row).assign(self.ask, self._rng)
        if isinstance(got, str):
            self.blocked[row] = True
            return None
        return got

    def exhausted(self, feasible: BoolArray) -> tuple[BoolArray, dict[str, int]]:
        """The feasible rows whose ports collide, and how many for each of Nomad's reasons
        ("network: reserved port collision http=9900")."""
        self.refresh()
        out = feasible & self.blocked
        dims: dict[str, int] = {}
        for row in np.flatnonzero(out).tolist():
            key = f"network: {self.check(row)}"
            dims[key] = dims.get(key, 0) + 1
        return out, dims
