"""The docker driver's agent configuration, `plugin "docker" { config { ... } }`, with Nomad's
names and defaults:

plugin "docker" {
  config {
    enabled          = true        # Drover's switch for every driver; on by default
    endpoint         = "unix:///var/run/docker.sock"   # default: DOCKER_HOST, else the socket
    allow_privileged = false
    volumes { enabled = false }    # host paths in a task's `volumes` and bind mounts
    gc {
      image       = true
      image_delay = "3m"
      container   = true
      dangling_containers { enabled = true  period = "5m"  creation_grace = "5m" }
    }
    extra_labels = ["job_name"]    # accepted: Drover always sets every com.hashicorp.nomad.* label
  }
}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drover.model.durations import SECOND, parse_duration


@dataclass
class DockerOptions:
    endpoint: str = ""
    allow_privileged: bool = False
    volumes_enabled: bool = False
    gc_image: bool = True
    gc_image_delay: float = 180.0  # seconds
    gc_container: bool = True
    dangling_enabled: bool = True
    dangling_period: float = 300.0
    dangling_grace: float = 300.0
    extra_labels: list[str] = field(default_factory=list)


_KNOWN = ("enabled", "endpoint", "allow_privileged", "volumes", "gc", "extra_labels")


def _one(value: Any) -> dict[str, Any]:
    """A block as HCL hands it (a dict, or a list of one)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, dict) else {}


def parse(
    config: dict[str, Any], problems: list[str], where: str = 'plugin "docker".config'
) -> DockerOptions:
    """The options of a docker plugin's config block; every problem appended to `problems`."""
    out = DockerOptions()
    problems.extend(f"{where}: unknown key {k!r}" for k in config if k not in _KNOWN)

    def flag(body: dict[str, Any], key: str, default: bool, at: str) -> bool:
        v = body.get(key, default)
        if not isinstance(v, bool):
            problems.append(f"{at}.{key}: must be true or false")
            return default
        return v

    def seconds(body: dict[str, Any], key: str, default: float, at: str) -> float:
        if key not in body:
            return default
        try:
            return parse_duration(body[key]) / SECOND
        except ValueError as e:
            problems.append(f"{at}.{key}: {e}")
            return default

    endpoint = config.get("endpoint", "")
    if not isinstance(endpoint, str):
        problems.append(f"{where}.endpoint: must be a string")
    else:
        out.endpoint = endpoint
    out.allow_privileged = flag(config, "allow_privileged", False, where)
    volumes = _one(config.get("volumes", {}))
    out.volumes_enabled = flag(volumes, "enabled", False, f"{where}.volumes")
    gc = _one(config.get("gc", {}))
    out.gc_image = flag(gc, "image", True, f"{where}.gc")
    out.gc_image_delay = seconds(gc, "image_delay", out.gc_image_delay, f"{where}.gc")
    out.gc_container = flag(gc, "container", True, f"{where}.gc")
    dangling = _one(gc.get("dangling_containers", {}))
    at = f"{where}.gc.dangling_containers"
    out.dangling_enabled = flag(dangling, "enabled", True, at)
    out.dangling_period = seconds(dangling, "period", out.dangling_period, at)
    out.dangling_grace = seconds(dangling, "creation_grace", out.dangling_grace, at)
    labels = config.get("extra_labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        problems.append(f"{where}.extra_labels: must be a list of strings")
    else:
        out.extra_labels = labels
    return out
