"""The agent's configuration: an HCL file in Nomad's client layout (read as drover.jobspec
reads plain HCL documents), overridden by flags.

region     = "global"
datacenter = "dc1"
name       = "node-1"
data_dir   = "/var/lib/drover"
http_addr  = "0.0.0.0:4647"   # where the API reaches this agent for alloc logs
client {
  node_class = "batch"
  node_pool  = "default"
  meta { rack = "r1" }
  reserved { cpu = 500  memory = 512  disk = 1024  reserved_ports = "22,80" }
  gc_interval   = "1m"
  gc_max_allocs = 50
  network_interface = "eth0"   # default: the default route's interface (loopback without one)
  min_dynamic_port  = 20000
  max_dynamic_port  = 32000
  max_kill_timeout  = "30s"
  host_network "public" { interface = "eth1"  reserved_ports = "22" }   # or cidr = "10.0.0.0/8"
  host_volume "data" { path = "/srv/data"  read_only = false }
}
plugin "raw_exec" { config { enabled = true } }
plugin "docker" { config { allow_privileged = false } }   # drover.client.dockeroptions

Every problem of a file is listed at once.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drover.client import dockeroptions
from drover.client.dockeroptions import DockerOptions
from drover.jobspec import parse_document
from drover.model.drivers import DRIVER_DOCKER, DRIVER_MOCK, DRIVER_RAW_EXEC
from drover.model.durations import MINUTE, SECOND, parse_duration
from drover.model.network import (
    DEFAULT_MAX_DYNAMIC_PORT,
    DEFAULT_MIN_DYNAMIC_PORT,
    MAX_VALID_PORT,
    ClientHostNetworkConfig,
    parse_port_ranges,
)
from drover.model.volumes import ClientHostVolumeConfig


@dataclass
class AgentConfig:
    api: str = "http://127.0.0.1:4646"
    data_dir: str = "data/client"
    name: str = ""
    datacenter: str = "dc1"
    node_class: str = ""
    node_pool: str = "default"
    meta: dict[str, str] = field(default_factory=dict)
    # raw_exec is off unless enabled, as in Nomad; docker is on (detected when an engine
    # answers); mock is always there (tests, simulation).
    drivers: set[str] = field(default_factory=lambda: {DRIVER_MOCK, DRIVER_DOCKER})
    docker: DockerOptions = field(default_factory=DockerOptions)
    reserved_cpu: int = 0
    reserved_memory: int = 0
    reserved_disk: int = 0
    # Terminal alloc directories (Nomad's client GC): looked at every gc_interval (ns), the
    # oldest removed while more than gc_max_allocs allocs are kept (Nomad: 1m, 50).
    gc_interval: int = MINUTE
    gc_max_allocs: int = 50
    # The listener serving alloc logs to the API (HOST:PORT; port 0 picks a free one).
    http_addr: str = "127.0.0.1:0"
    # The region tasks are told they run in (NOMAD_REGION).
    region: str = "global"
    # Networks: the interface whose addresses ports are given on ("": the default route's),
    # the dynamic port range, the host ports no alloc may have, and named host networks.
    network_interface: str = ""
    min_dynamic_port: int = DEFAULT_MIN_DYNAMIC_PORT
    max_dynamic_port: int = DEFAULT_MAX_DYNAMIC_PORT
    reserved_ports: str = ""
    host_networks: dict[str, ClientHostNetworkConfig] = field(default_factory=dict)
    host_volumes: dict[str, ClientHostVolumeConfig] = field(default_factory=dict)
    # A task's kill_timeout is capped at this (ns), as Nomad's client caps it (30s).
    max_kill_timeout: int = 30 * SECOND


def load(path: Path, config: AgentConfig | None = None) -> AgentConfig:
    """Read an HCL agent configuration file into `config` (a fresh one by default)."""
    cfg = config or AgentConfig()
    doc = parse_document(path.read_text(), filename=str(path))
    problems: list[str] = []
    for key in ("region", "datacenter", "name", "data_dir", "http_addr"):
        if key in doc:
            setattr(cfg, key, str(doc[key]))
    if "http_addr" in doc and (problem := http_addr_problem(cfg.http_addr)):
        problems.append(f"http_addr: {problem}")
    client = _block(doc, "client", problems)
    for key in ("node_class", "node_pool"):
        if key in client:
            setattr(cfg, key, str(client[key]))
    cfg.meta.update({str(k): str(v) for k, v in _block(client, "meta", problems, "client.").items()})
    reserved = _block(client, "reserved", problems, "client.")
    for key, attr in (("cpu", "reserved_cpu"), ("memory", "reserved_memory"), ("disk", "reserved_disk")):
        if key in reserved:
            if not isinstance(reserved[key], int) or reserved[key] < 0:
                problems.append(f"client.reserved.{key}: must be a non-negative integer")
            else:
                setattr(cfg, attr, reserved[key])
    if "reserved_ports" in reserved:
        cfg.reserved_ports = _port_ranges(
            reserved["reserved_ports"], "client.reserved.reserved_ports", problems
        )
    _gc(client, cfg, problems)
    _network(client, cfg, problems)
    _host_volumes(client, cfg, problems)
    _plugins(doc, cfg, problems)
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return cfg


def _block(body: dict[str, Any], key: str, problems: list[str], where: str = "") -> dict[str, Any]:
    """The block `key` of `body`, written once (or an object assigned to `key`); {} when
    there is none or it is not one, with the problem recorded."""
    value = body.get(key, {})
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        problems.append(f"{where}{key}: must be one block")
        return {}
    return value


def http_addr_problem(addr: str) -> str:
    """What is wrong with a HOST:PORT listening address, or "" when nothing is."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        return f"must be HOST:PORT (port 0 for any free one), not {addr!r}"
    return ""


def _gc(client: dict[str, Any], cfg: AgentConfig, problems: list[str]) -> None:
    """client.gc_interval (a duration) and client.gc_max_allocs (a positive integer)."""
    if "gc_interval" in client:
        try:
            interval = parse_duration(client["gc_interval"])
        except ValueError as e:
            problems.append(f"client.gc_interval: {e}")
        else:
            if interval <= 0:
                problems.append("client.gc_interval: must be positive")
            else:
                cfg.gc_interval = interval
    if "gc_max_allocs" in client:
        n = client["gc_max_allocs"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            problems.append("client.gc_max_allocs: must be a positive integer")
        else:
            cfg.gc_max_allocs = n


def _plugins(doc: dict[str, Any], cfg: AgentConfig, problems: list[str]) -> None:
    """plugin "<driver>" { config { enabled = true|false ... } } (docker's options:
    drover.client.dockeroptions)."""
    for name, body in _labelled(doc, "plugin", problems, "driver"):
        config = _block(body, "config", problems, f'plugin "{name}".')
        enabled = config.get("enabled", True)
        if name == DRIVER_DOCKER:
            cfg.docker = dockeroptions.parse(config, problems)
        if name not in (DRIVER_MOCK, DRIVER_RAW_EXEC, DRIVER_DOCKER):
            problems.append(f'plugin "{name}": unknown driver (this agent has mock, raw_exec and docker)')
        elif enabled is True:
            cfg.drivers.add(name)
        elif enabled is False:
            cfg.drivers.discard(name)
        else:
            problems.append(f'plugin "{name}": config.enabled must be true or false')


def _labelled(
    body: dict[str, Any], key: str, problems: list[str], label: str, where: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    """The blocks `key "<label>" { ... }` of `body`, each once."""
    blocks = body.get(key, [])
    usage = f'{where}{key}: a {key} block is labelled with its {label}, {key} "<{label}>" {{ ... }}'
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        problems.append(usage)
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for block in blocks:
        for name, inner in block.items():
            if not isinstance(inner, dict):
                problems.append(usage)
            elif any(seen == name for seen, _ in out):
                problems.append(f'{where}{key} "{name}": defined more than once')
            else:
                out.append((str(name), inner))
    return out


def _unknown_keys(body: dict[str, Any], known: tuple[str, ...], where: str, problems: list[str]) -> None:
    problems.extend(f"{where}: unknown key {k!r}" for k in body if k not in known)


def _port_ranges(value: Any, where: str, problems: list[str]) -> str:
    """A port list ("22,80,8000-8010") as written, or "" with the problem recorded."""
    if not isinstance(value, str):
        problems.append(f'{where}: must be a string of ports and ranges, "22,80,8000-8010"')
        return ""
    try:
        parse_port_ranges(value)
    except ValueError as e:
        problems.append(f"{where}: {e}")
        return ""
    return value


def _port(client: dict[str, Any], key: str, problems: list[str]) -> int | None:
    value = client[key]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_VALID_PORT:
        problems.append(f"client.{key}: must be a port, 1 to {MAX_VALID_PORT}")
        return None
    return value


def _network(client: dict[str, Any], cfg: AgentConfig, problems: list[str]) -> None:
    """client.network_interface, the dynamic port range and the host_network blocks."""
    interfaces = {name for _, name in socket.if_nameindex()}
    if "network_interface" in client:
        name = client["network_interface"]
        if not isinstance(name, str) or name not in interfaces:
            problems.append(
                f"client.network_interface: no interface {name!r} here (there are {', '.join(sorted(interfaces))})"
            )
        else:
            cfg.network_interface = name
    for key in ("min_dynamic_port", "max_dynamic_port"):
        if key in client and (port := _port(client, key, problems)) is not None:
            setattr(cfg, key, port)
    if cfg.min_dynamic_port > cfg.max_dynamic_port:
        problems.append(
            f"client.min_dynamic_port ({cfg.min_dynamic_port}) is above "
            f"client.max_dynamic_port ({cfg.max_dynamic_port})"
        )
    if "max_kill_timeout" in client:
        try:
            cfg.max_kill_timeout = parse_duration(client["max_kill_timeout"])
        except ValueError as e:
            problems.append(f"client.max_kill_timeout: {e}")
    for name, body in _labelled(client, "host_network", problems, "name", "client."):
        where = f'client.host_network "{name}"'
        _unknown_keys(body, ("interface", "cidr", "reserved_ports"), where, problems)
        interface, cidr = body.get("interface", ""), body.get("cidr", "")
        if not isinstance(interface, str) or (interface and interface not in interfaces):
            problems.append(f"{where}: interface: no interface {interface!r} here")
        if not isinstance(cidr, str):
            problems.append(f"{where}: cidr: must be a string")
        else:
            for block in (c.strip() for c in cidr.split(",") if c.strip()):
                try:
                    ipaddress.ip_network(block, strict=False)
                except ValueError:
                    problems.append(f"{where}: cidr: {block!r} is not a CIDR block")
        ports = _port_ranges(body.get("reserved_ports", ""), f"{where}: reserved_ports", problems)
        cfg.host_networks[name] = ClientHostNetworkConfig(
            name=name, interface=str(interface), cidr=str(cidr), reserved_ports=ports
        )


def _host_volumes(client: dict[str, Any], cfg: AgentConfig, problems: list[str]) -> None:
    """host_volume "<name>" { path = "/abs/dir"  read_only = false }: the path must exist."""
    for name, body in _labelled(client, "host_volume", problems, "name", "client."):
        where = f'client.host_volume "{name}"'
        _unknown_keys(body, ("path", "read_only"), where, problems)
        path, read_only = body.get("path"), body.get("read_only", False)
        if not isinstance(path, str) or not path.startswith("/"):
            problems.append(f"{where}: path must be an absolute path")
        elif not Path(path).is_dir():
            problems.append(f"{where}: path {path!r} is not a directory on this host")
        if not isinstance(read_only, bool):
            problems.append(f"{where}: read_only must be true or false")
        cfg.host_volumes[name] = ClientHostVolumeConfig(
            name=name, path=str(path), read_only=read_only is True
        )
