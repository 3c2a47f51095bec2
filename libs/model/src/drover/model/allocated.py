"""What an alloc was given (Nomad's AllocatedResources): each task's CPU and memory, and the
group's shared disk and networks with the ports assigned on its node."""

from __future__ import annotations

from pydantic import Field

from drover.model.base import NomadModel
from drover.model.job import TaskLifecycle
from drover.model.network import AllocatedPortMapping, NetworkResource


class AllocatedCpuResources(NomadModel):
    cpu_shares: int = Field(0, alias="CpuShares")
    reserved_cores: list[int] = Field(default_factory=list)


class AllocatedMemoryResources(NomadModel):
    memory_mb: int = 0
    memory_max_mb: int = 0


class AllocatedTaskResources(NomadModel):
    cpu: AllocatedCpuResources = Field(default_factory=AllocatedCpuResources, alias="Cpu")
    memory: AllocatedMemoryResources = Field(default_factory=AllocatedMemoryResources)
    networks: list[NetworkResource] = Field(default_factory=list)


class AllocatedSharedResources(NomadModel):
    networks: list[NetworkResource] = Field(default_factory=list)
    disk_mb: int = 0
    ports: list[AllocatedPortMapping] = Field(default_factory=list)


class AllocatedResources(NomadModel):
    tasks: dict[str, AllocatedTaskResources] = Field(default_factory=dict)
    task_lifecycles: dict[str, TaskLifecycle | None] = Field(default_factory=dict)
    shared: AllocatedSharedResources = Field(default_factory=AllocatedSharedResources)

    def port(self, label: str) -> AllocatedPortMapping | None:
        for p in self.shared.ports:
            if p.label == label:
                return p
        return None
