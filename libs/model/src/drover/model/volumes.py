"""Volumes: a group's `volume` requests, a task's `volume_mount`s, and the host volumes a
client offers (its `host_volume` config)."""

from __future__ import annotations

from pydantic import Field

from drover.model.base import NomadModel

VOLUME_TYPE_HOST = "host"
VOLUME_TYPE_CSI = "csi"
VOLUME_TYPES = (VOLUME_TYPE_HOST, VOLUME_TYPE_CSI)
PROPAGATION_PRIVATE = "private"
PROPAGATION_MODES = (PROPAGATION_PRIVATE, "host-to-task", "bidirectional")


class CSIMountOptions(NomadModel):
    fs_type: str = Field("", alias="FSType")
    mount_flags: list[str] = Field(default_factory=list)


class VolumeRequest(NomadModel):
    """A group's `volume "name" {...}`: a host volume (by its `source` name on the node) or a
    CSI volume."""

    name: str = ""
    type: str = ""
    source: str = ""
    read_only: bool = False
    sticky: bool = False
    access_mode: str = ""
    attachment_mode: str = ""
    mount_options: CSIMountOptions | None = None
    per_alloc: bool = False


class VolumeMount(NomadModel):
    """A task's `volume_mount`: the group volume it mounts, where, and how."""

    volume: str = ""
    destination: str = ""
    read_only: bool = False
    propagation_mode: str = ""
    selinux_label: str = Field("", alias="SELinuxLabel")


class ClientHostVolumeConfig(NomadModel):
    """A host volume a client offers: its name (the key of Node.HostVolumes), path, and
    whether it is read-only for every task."""

    name: str = ""
    path: str = ""
    read_only: bool = False
