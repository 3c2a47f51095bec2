"""A task's host volume mounts, as Nomad's volume hook resolves them: each `volume_mount` of a
group `volume` of type host, to the node's `host_volume` of that source (a `per_alloc`
volume's source carries the alloc's index, "data[0]"). Pure: the agent hands in its host
volumes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from drover.control.client.taskenv import clean_env_var
from drover.model.job import Task, TaskGroup
from drover.model.volumes import VOLUME_TYPE_HOST, ClientHostVolumeConfig

# The variable that hands a host volume's path to a driver that cannot mount (raw_exec,
# mock): DROVER_VOLUME_<the group volume's name>.
VOLUME_ENV_PREFIX = "DROVER_VOLUME_"


class VolumeError(ValueError):
    """The node does not have a host volume the group asks for."""


@dataclass(frozen=True)
class HostVolumeMount:
    volume: str  # the group's volume, as the mount names it
    host_path: str
    task_path: str  # the mount's destination
    read_only: bool  # the node's volume, the group's request or the mount says so


def _source(source: str, per_alloc: bool, alloc_name: str) -> str:
    if not per_alloc:
        return source
    lb = alloc_name.rfind("[")
    return source + (alloc_name[lb:] if lb >= 0 else "")


def host_volume_mounts(
    task: Task, tg: TaskGroup, host_volumes: Mapping[str, ClientHostVolumeConfig], alloc_name: str
) -> list[HostVolumeMount]:
    """The task's mounts of the group's host volumes. Raises VolumeError naming every host
    volume of the group the node lacks (checked for each task, mounting or not, as Nomad does:
    a node restarted without one must not run the group)."""
    wanted = {name: v for name, v in tg.volumes.items() if v.type == VOLUME_TYPE_HOST}
    missing = sorted(
        {
            src
            for v in wanted.values()
            if (src := _source(v.source, v.per_alloc, alloc_name)) not in host_volumes
        }
    )
    if missing:
        raise VolumeError(f"host volume validation error: missing host volume {', '.join(missing)}")
    mounts = []
    for m in task.volume_mounts:
        req = wanted.get(m.volume)
        if req is None:
            continue  # a CSI volume's mount, or one that validation refused
        host = host_volumes[_source(req.source, req.per_alloc, alloc_name)]
        read_only = host.read_only or req.read_only or m.read_only
        mounts.append(HostVolumeMount(m.volume, host.path, m.destination, read_only))
    return mounts


def volume_env(mounts: list[HostVolumeMount]) -> dict[str, str]:
    """DROVER_VOLUME_<volume> = its host path, for each mounted volume."""
    return {f"{VOLUME_ENV_PREFIX}{clean_env_var(m.volume)}": m.host_path for m in mounts}
