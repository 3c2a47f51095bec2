"""The agent's configuration: an HCL file in Nomad's client layout (read as drover.jobspec
reads plain HCL documents), overridden by flags.

datacenter = "dc1"
name       = "node-1"
data_dir   = "/var/lib/drover"
http_addr  = "0.0.0.0:4647"   # where the API reaches this agent for alloc logs
client {
  node_class = "batch"
  node_pool  = "default"
  meta { rack = "r1" }
  reserved { cpu = 500  memory = 512  disk = 1024 }
  gc_interval   = "1m"
  gc_max_allocs = 50
}
plugin "raw_exec" { config { enabled = true } }
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drover.jobspec import parse_document
from drover.model.drivers import DRIVER_MOCK, DRIVER_RAW_EXEC
from drover.model.durations import MINUTE, parse_duration


@dataclass
class AgentConfig:
    api: str = "http://127.0.0.1:4646"
    data_dir: str = "data/client"
    name: str = ""
    datacenter: str = "dc1"
    node_class: str = ""
    node_pool: str = "default"
    meta: dict[str, str] = field(default_factory=dict)
    # raw_exec is off unless enabled, as in Nomad; mock is always there (tests, simulation).
    drivers: set[str] = field(default_factory=lambda: {DRIVER_MOCK})
    reserved_cpu: int = 0
    reserved_memory: int = 0
    reserved_disk: int = 0
    # Terminal alloc directories (Nomad's client GC): looked at every gc_interval (ns), the
    # oldest removed while more than gc_max_allocs allocs are kept (Nomad: 1m, 50).
    gc_interval: int = MINUTE
    gc_max_allocs: int = 50
    # The listener serving alloc logs to the API (HOST:PORT; port 0 picks a free one).
    http_addr: str = "127.0.0.1:0"


def load(path: Path, config: AgentConfig | None = None) -> AgentConfig:
    """Read an HCL agent configuration file into `config` (a fresh one by default)."""
    cfg = config or AgentConfig()
    doc = parse_document(path.read_text(), filename=str(path))
    problems: list[str] = []
    for key in ("datacenter", "name", "data_dir", "http_addr"):
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
    _gc(client, cfg, problems)
    plugins = doc.get("plugin", [])
    if not isinstance(plugins, list) or not all(isinstance(block, dict) for block in plugins):
        problems.append('plugin: must be blocks, plugin "<driver>" { ... }')
        plugins = []
    for block in plugins:
        for name, body in block.items():
            if not isinstance(body, dict):
                problems.append(
                    'plugin: a plugin block is labelled with its driver, plugin "<driver>" { ... }'
                )
                continue
            enabled = _block(body, "config", problems, f'plugin "{name}".').get("enabled", True)
            if name not in (DRIVER_MOCK, DRIVER_RAW_EXEC):
                problems.append(f'plugin "{name}": unknown driver (this agent has mock and raw_exec)')
            elif enabled is True:
                cfg.drivers.add(name)
            elif enabled is False:
                cfg.drivers.discard(name)
            else:
                problems.append(f'plugin "{name}": config.enabled must be true or false')
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
