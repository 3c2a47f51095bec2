"""What the agent tells the servers about its machine (Nomad's fingerprinters, the ones that
matter for placement): CPU, memory, disk, OS and kernel, architecture, hostname, drivers,
networks (drover.client.network) with the dynamic port range and reserved ports, host
volumes and host networks."""

from __future__ import annotations

import os
import platform
import shutil
import socket
from pathlib import Path

from drover.client.config import AgentConfig
from drover.client.dockerdriver import fingerprint as docker_fingerprint
from drover.client.network import chosen_interface, default_route_interface, node_networks, read_interfaces
from drover.model.drivers import DRIVER_DOCKER
from drover.model.node import (
    DriverInfo,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeReservedNetworkResources,
    NodeReservedResources,
    NodeResources,
)

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7l": "arm"}


def _cpu_mhz() -> float:
    """The CPU's clock (MHz): the highest cpu MHz in /proc/cpuinfo, else 1,000."""
    try:
        mhz = [
            float(line.split(":", 1)[1])
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.lower().startswith("cpu mhz")
        ]
    except OSError:
        mhz = []
    return max(mhz) if mhz else 1000.0


def _memory_mb() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 1024


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("ID="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system().lower()


def fingerprint(node_id: str, cfg: AgentConfig) -> Node:
    cores = os.cpu_count() or 1
    mhz = _cpu_mhz()
    total_mhz = int(cores * mhz)
    memory = _memory_mb()
    Path(cfg.data_dir).mkdir(parents=True, exist_ok=True)
    disk = shutil.disk_usage(cfg.data_dir).free // (1024 * 1024)
    hostname = socket.gethostname()
    attributes = {
        "os.name": _os_name(),
        "os.version": platform.release(),
        "kernel.name": platform.system().lower(),
        "kernel.version": platform.release(),
        "cpu.arch": _ARCH.get(platform.machine(), platform.machine()),
        "cpu.numcores": str(cores),
        "cpu.frequency": str(int(mhz)),
        "cpu.totalcompute": str(total_mhz),
        "memory.totalbytes": str(memory * 1024 * 1024),
        "unique.hostname": hostname,
        "unique.storage.volume": cfg.data_dir,
        "unique.storage.bytesfree": str(disk * 1024 * 1024),
    }
    drivers = {d: DriverInfo(detected=True, healthy=True) for d in sorted(cfg.drivers)}
    for driver in sorted(cfg.drivers):
        if driver == DRIVER_DOCKER:
            drivers[driver], docker_attributes = docker_fingerprint(cfg.docker)
            attributes.update(docker_attributes)
        else:
            attributes[f"driver.{driver}"] = "1"
    interface = chosen_interface(cfg.network_interface, default_route_interface())
    networks, node_nets = node_networks(read_interfaces(), interface, cfg.host_networks)
    if networks:
        attributes["unique.network.ip-address"] = networks[0].ip
    return Node(
        id=node_id,
        name=cfg.name or hostname,
        datacenter=cfg.datacenter,
        node_class=cfg.node_class,
        node_pool=cfg.node_pool,
        attributes=attributes,
        meta=dict(cfg.meta),
        drivers=drivers,
        node_resources=NodeResources(
            cpu=NodeCpuResources(cpu_shares=total_mhz, total_cpu_cores=cores),
            memory=NodeMemoryResources(memory_mb=memory),
            disk=NodeDiskResources(disk_mb=disk),
            networks=networks,
            node_networks=node_nets,
            min_dynamic_port=cfg.min_dynamic_port,
            max_dynamic_port=cfg.max_dynamic_port,
        ),
        reserved_resources=NodeReservedResources(
            cpu=NodeCpuResources(cpu_shares=cfg.reserved_cpu),
            memory=NodeMemoryResources(memory_mb=cfg.reserved_memory),
            disk=NodeDiskResources(disk_mb=cfg.reserved_disk),
            networks=NodeReservedNetworkResources(reserved_host_ports=cfg.reserved_ports),
        ),
        host_volumes={name: v.model_copy() for name, v in cfg.host_volumes.items()},
        host_networks={name: n.model_copy() for name, n in cfg.host_networks.items()},
        status="ready",
    )
