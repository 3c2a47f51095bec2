"""What `drover sim`'s nodes look like: Nomad's Node JSON for node `i` of a simulated cluster,
spread over datacenters and racks, each with an address of its own."""

from __future__ import annotations

import ipaddress
from typing import Any

from drover.model.network import DEFAULT_MAX_DYNAMIC_PORT, DEFAULT_MIN_DYNAMIC_PORT


def sim_address(i: int) -> str:
    """Node `i`'s address: unique for the first 16 million nodes (10.0.0.1 up)."""
    return str(ipaddress.IPv4Address(0x0A000000 + i % 0xFFFFFE + 1))


def sim_node(
    i: int, prefix: str, dcs: int, racks: int, drivers: list[str], cpu: int, mem: int
) -> dict[str, Any]:
    node_id = f"{prefix}{i:05d}"
    ip = sim_address(i)
    return {
        "ID": node_id,
        "Name": node_id,
        "Datacenter": f"dc{i % dcs + 1}",
        "Status": "ready",
        "Meta": {"rack": f"r{i % racks + 1}"},
        "Attributes": {
            "kernel.name": "linux",
            "os.name": "sim",
            "cpu.arch": "amd64",
            "unique.hostname": node_id,
            "unique.network.ip-address": ip,
            **{f"driver.{d}": "1" for d in drivers},
        },
        "Drivers": {d: {"Detected": True, "Healthy": True} for d in drivers},
        "NodeResources": {
            "Cpu": {"CpuShares": cpu},
            "Memory": {"MemoryMB": mem},
            "Disk": {"DiskMB": 100_000},
            "Networks": [{"Mode": "host", "Device": "eth0", "IP": ip, "CIDR": f"{ip}/32", "MBits": 1000}],
            "NodeNetworks": [
                {
                    "Mode": "host",
                    "Device": "eth0",
                    "Speed": 1000,
                    "Addresses": [{"Family": "ipv4", "Alias": "default", "Address": ip}],
                }
            ],
            "MinDynamicPort": DEFAULT_MIN_DYNAMIC_PORT,
            "MaxDynamicPort": DEFAULT_MAX_DYNAMIC_PORT,
        },
    }
