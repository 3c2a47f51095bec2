"""A small cluster in memory for the command tests: commands read it through `StateReads`,
as the API reads the projections."""

from __future__ import annotations

from typing import Any

import pytest

from drover.control.commands.reads import StateReads
from drover.model import (
    Allocation,
    DriverInfo,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    Resources,
    Task,
    TaskGroup,
)
from drover.model.canonicalize import canonicalize
from drover.model.state import InMemoryState

NOW = 1_700_000_000_000_000_000


def node(node_id: str, **kw: Any) -> Node:
    return Node(
        id=node_id,
        name=node_id,
        datacenter=kw.pop("datacenter", "dc1"),
        drivers={"mock": DriverInfo()},
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=4000),
            memory=NodeMemoryResources(memory_mb=8192),
            disk=NodeDiskResources(disk_mb=100_000),
        ),
        **kw,
    )


def job(job_id: str = "web", count: int = 3, **kw: Any) -> Job:
    return canonicalize(
        Job(
            id=job_id,
            datacenters=kw.pop("datacenters", ["dc1"]),
            task_groups=[
                TaskGroup(
                    name="g",
                    count=count,
                    tasks=[Task(name="t", driver="mock", resources=Resources(cpu=100, memory_mb=64))],
                )
            ],
            **kw,
        )
    )


def alloc(alloc_id: str, of: Job, node_id: str = "n1", **kw: Any) -> Allocation:
    return Allocation(
        id=alloc_id,
        name=kw.pop("name", f"{of.id}.g[0]"),
        namespace=of.namespace,
        job_id=of.id,
        job_version=of.version,
        task_group="g",
        node_id=node_id,
        **kw,
    )


class Cluster:
    """An in-memory state, and the reads a command makes of it."""

    def __init__(self) -> None:
        self.state = InMemoryState()
        self.reads = StateReads(self.state)

    def add(self, *objs: Node | Job | Allocation) -> Cluster:
        for o in objs:
            if isinstance(o, Node):
                self.state.upsert_node(o)
            elif isinstance(o, Job):
                self.state.upsert_job(o)
            else:
                self.state.upsert_alloc(o)
        return self


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()
