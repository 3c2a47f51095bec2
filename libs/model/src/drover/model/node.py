"""Nodes: the machines allocations run on, as their clients fingerprint them."""

from __future__ import annotations

import hashlib

from pydantic import Field

from drover.model.base import NomadModel
from drover.model.network import (
    DEFAULT_MAX_DYNAMIC_PORT,
    DEFAULT_MIN_DYNAMIC_PORT,
    ClientHostNetworkConfig,
    NetworkResource,
    NodeNetworkResource,
)
from drover.model.volumes import ClientHostVolumeConfig

NODE_STATUS_INIT = "initializing"
NODE_STATUS_READY = "ready"
NODE_STATUS_DOWN = "down"
NODE_STATUS_DISCONNECTED = "disconnected"

NODE_ELIGIBLE = "eligible"
NODE_INELIGIBLE = "ineligible"


class DriverInfo(NomadModel):
    detected: bool = True
    healthy: bool = True
    health_description: str = ""
    attributes: dict[str, str] = Field(default_factory=dict)


class NodeCpuResources(NomadModel):
    cpu_shares: int = Field(0, alias="CpuShares")
    total_cpu_cores: int = Field(0, alias="TotalCpuCores")


class NodeMemoryResources(NomadModel):
    memory_mb: int = 0


class NodeDiskResources(NomadModel):
    disk_mb: int = 0


class NodeResources(NomadModel):
    """What a node has: CPU, memory, disk, and its networks with the dynamic port range."""

    cpu: NodeCpuResources = Field(default_factory=NodeCpuResources, alias="Cpu")
    memory: NodeMemoryResources = Field(default_factory=NodeMemoryResources)
    disk: NodeDiskResources = Field(default_factory=NodeDiskResources)
    networks: list[NetworkResource] = Field(default_factory=list)
    node_networks: list[NodeNetworkResource] = Field(default_factory=list)
    min_dynamic_port: int = DEFAULT_MIN_DYNAMIC_PORT
    max_dynamic_port: int = DEFAULT_MAX_DYNAMIC_PORT


class NodeReservedNetworkResources(NomadModel):
    """Host ports no alloc may be given, as the client's `reserved { reserved_ports }` writes
    them ("22,80,8000-8010")."""

    reserved_host_ports: str = ""


class NodeReservedResources(NomadModel):
    """What the operator held back from the scheduler on a node."""

    cpu: NodeCpuResources = Field(default_factory=NodeCpuResources, alias="Cpu")
    memory: NodeMemoryResources = Field(default_factory=NodeMemoryResources)
    disk: NodeDiskResources = Field(default_factory=NodeDiskResources)
    networks: NodeReservedNetworkResources = Field(default_factory=NodeReservedNetworkResources)


class DrainSpec(NomadModel):
    deadline: int = 0
    ignore_system_jobs: bool = False


class DrainStrategy(NomadModel):
    drain_spec: DrainSpec = Field(default_factory=DrainSpec)
    force_deadline: int = 0
    started_at: int = 0


class Node(NomadModel):
    id: str = ""
    name: str = ""
    datacenter: str = "dc1"
    node_class: str = ""
    node_pool: str = "default"
    computed_class: str = ""
    attributes: dict[str, str] = Field(default_factory=dict)
    meta: dict[str, str] = Field(default_factory=dict)
    drivers: dict[str, DriverInfo] = Field(default_factory=dict)
    node_resources: NodeResources = Field(default_factory=NodeResources)
    reserved_resources: NodeReservedResources = Field(default_factory=NodeReservedResources)
    host_volumes: dict[str, ClientHostVolumeConfig] = Field(default_factory=dict)
    host_networks: dict[str, ClientHostNetworkConfig] = Field(default_factory=dict)
    status: str = NODE_STATUS_READY
    status_description: str = ""
    status_updated_at: int = 0
    scheduling_eligibility: str = NODE_ELIGIBLE
    drain_strategy: DrainStrategy | None = None
    http_addr: str = ""
    create_index: int = 0
    modify_index: int = 0

    def ready(self) -> bool:
        return self.status == NODE_STATUS_READY

    def draining(self) -> bool:
        return self.drain_strategy is not None

    def eligible(self) -> bool:
        return self.scheduling_eligibility == NODE_ELIGIBLE

    def terminal_status(self) -> bool:
        return self.status == NODE_STATUS_DOWN

    def capacity(self) -> tuple[int, int, int]:
        """Schedulable (cpu MHz, memory MB, disk MB): totals less what the operator reserved."""
        r, res = self.node_resources, self.reserved_resources
        return (
            r.cpu.cpu_shares - res.cpu.cpu_shares,
            r.memory.memory_mb - res.memory.memory_mb,
            r.disk.disk_mb - res.disk.disk_mb,
        )


def _is_unique(key: str) -> bool:
    return key.startswith("unique.")


def compute_class(node: Node) -> str:
    """Nomad's computed node class: a hash of everything feasibility may look at, except the
    ``unique.*`` attributes and meta (they differ on every node, so they would defeat the cache)."""
    h = hashlib.blake2b(digest_size=12)

    def put(*parts: str) -> None:
        for p in parts:
            h.update(p.encode())
            h.update(b"\x00")

    put("dc", node.datacenter, "pool", node.node_pool, "class", node.node_class)
    for k in sorted(node.attributes):
        if not _is_unique(k):
            put("a", k, node.attributes[k])
    for k in sorted(node.meta):
        if not _is_unique(k):
            put("m", k, node.meta[k])
    for k in sorted(node.drivers):
        d = node.drivers[k]
        put("d", k, str(d.detected), str(d.healthy))
    # What network and host volume feasibility look at: network modes, host network names,
    # host volumes (not addresses or ports, which differ on every node).
    for mode in sorted({n.mode for n in node.node_resources.networks}):
        put("nm", mode)
    for alias in sorted({a.alias for n in node.node_resources.node_networks for a in n.addresses}):
        put("hn", alias)
    for name in sorted(node.host_volumes):
        put("hv", name, str(node.host_volumes[name].read_only))
    return "v1:" + h.hexdigest()


def with_computed_class(node: Node) -> Node:
    """The node with ComputedClass filled in."""
    return node.model_copy(update={"computed_class": compute_class(node)})
