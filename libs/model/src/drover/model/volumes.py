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
# SELinux relabelling of a mount: shared ("z") or private ("Z") to the task.
SELINUX_LABELS = ("z", "Z")
ACCESS_MODE_SINGLE_NODE_READER = "single-node-reader-only"
ACCESS_MODE_SINGLE_NODE_WRITER = "single-node-writer"
ACCESS_MODE_MULTI_NODE_READER = "multi-node-reader-only"
ACCESS_MODE_MULTI_NODE_SINGLE_WRITER = "multi-node-single-writer"
ACCESS_MODE_MULTI_NODE_MULTI_WRITER = "multi-node-multi-writer"
# A host volume's access modes ("" is any); a CSI volume's access and attachment modes.
HOST_ACCESS_MODES = ("", ACCESS_MODE_SINGLE_NODE_READER, ACCESS_MODE_SINGLE_NODE_WRITER,
                     "single-node-single-writer", "single-node-multi-writer")  # fmt: skip
CSI_ACCESS_MODES = (ACCESS_MODE_SINGLE_NODE_READER, ACCESS_MODE_SINGLE_NODE_WRITER, ACCESS_MODE_MULTI_NODE_READER,
                    ACCESS_MODE_MULTI_NODE_SINGLE_WRITER, ACCESS_MODE_MULTI_NODE_MULTI_WRITER)  # fmt: skip
ATTACHMENT_MODE_BLOCK_DEVICE = "block-device"
CSI_ATTACHMENT_MODES = (ATTACHMENT_MODE_BLOCK_DEVICE, "file-system")


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
