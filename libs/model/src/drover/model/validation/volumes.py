"""A group's volumes and its tasks' volume mounts (structs VolumeRequest.Validate,
VolumeMount.Validate, and Task.Validate's mounts of undefined volumes)."""

from __future__ import annotations

from drover.model.job import JOB_TYPE_SYSBATCH, JOB_TYPE_SYSTEM, Task, TaskGroup
from drover.model.validation.places import at
from drover.model.volumes import (
    ACCESS_MODE_MULTI_NODE_READER,
    ACCESS_MODE_MULTI_NODE_SINGLE_WRITER,
    ACCESS_MODE_SINGLE_NODE_READER,
    ACCESS_MODE_SINGLE_NODE_WRITER,
    ATTACHMENT_MODE_BLOCK_DEVICE,
    CSI_ACCESS_MODES,
    CSI_ATTACHMENT_MODES,
    HOST_ACCESS_MODES,
    PROPAGATION_MODES,
    SELINUX_LABELS,
    VOLUME_TYPE_CSI,
    VOLUME_TYPE_HOST,
    VOLUME_TYPES,
    VolumeMount,
    VolumeRequest,
)


def volumes_at(where: str, tg: TaskGroup, job_type: str) -> list[str]:
    """The problems of a group's volumes, each placed at its volume."""
    canaries = tg.update.canary if tg.update is not None else 0
    out: list[str] = []
    for name, vol in sorted(tg.volumes.items()):
        out += at(f"{where}, volume {name!r}", volume_problems(vol, job_type, tg.count, canaries))
    return out


def volume_problems(v: VolumeRequest, job_type: str, count: int, canaries: int) -> list[str]:
    """What is wrong with one volume request of a group of `count` allocs."""
    if v.type not in VOLUME_TYPES:
        return [f"volume has unrecognized type {v.type!r} (expected {' or '.join(VOLUME_TYPES)})"]
    out: list[str] = []
    if not v.source:
        out.append("volume has an empty source")
    if v.per_alloc:
        if job_type in (JOB_TYPE_SYSTEM, JOB_TYPE_SYSBATCH):
            out.append("volume cannot be per_alloc for system or sysbatch jobs")
        if canaries > 0:
            out.append("volume cannot be per_alloc when canaries are in use")
        if v.sticky:
            out.append("volume cannot be per_alloc and sticky at the same time")
    if v.type == VOLUME_TYPE_HOST:
        out += _host_problems(v)
    elif v.type == VOLUME_TYPE_CSI:
        out += _csi_problems(v, count)
    return out


def _host_problems(v: VolumeRequest) -> list[str]:
    out: list[str] = []
    if v.mount_options is not None:
        out.append("host volumes cannot have mount options")
    if v.access_mode not in HOST_ACCESS_MODES:
        out.append(f"host volumes cannot be mounted with {v.access_mode} access mode")
    elif v.access_mode == ACCESS_MODE_SINGLE_NODE_READER and not v.read_only:
        out.append(f"{v.access_mode} volumes must be read-only")
    return out


def _csi_problems(v: VolumeRequest, count: int) -> list[str]:
    out: list[str] = []
    shared = count > 1 and not v.per_alloc
    if not v.attachment_mode:
        out.append("CSI volumes must have an attachment mode")
    elif v.attachment_mode not in CSI_ATTACHMENT_MODES:
        out.append(
            f"attachment mode {v.attachment_mode!r} is unknown (expected {', '.join(CSI_ATTACHMENT_MODES)})"
        )
    elif v.attachment_mode == ATTACHMENT_MODE_BLOCK_DEVICE and v.mount_options is not None:
        out.append("block devices cannot have mount options")
    mode = v.access_mode
    if not mode:
        out.append("CSI volumes must have an access mode")
    elif mode not in CSI_ACCESS_MODES:
        out.append(f"access mode {mode!r} is unknown (expected one of {', '.join(CSI_ACCESS_MODES)})")
    elif mode in (ACCESS_MODE_SINGLE_NODE_READER, ACCESS_MODE_MULTI_NODE_READER) and not v.read_only:
        out.append(f"{mode} volumes must be read-only")
    if mode == ACCESS_MODE_SINGLE_NODE_READER and shared:
        out.append(f"volume with {mode} access mode allows only one reader")
    elif mode == ACCESS_MODE_SINGLE_NODE_WRITER and shared:
        out.append(f"volume with {mode} access mode allows only one reader or writer")
    elif mode == ACCESS_MODE_MULTI_NODE_SINGLE_WRITER and shared and not v.read_only:
        out.append(f"volume with {mode} access mode allows only one writer")
    return out


def volume_mounts_at(where: str, task: Task, tg: TaskGroup) -> list[str]:
    """Each of a task's mounts names a volume of its group, with a known propagation mode and
    SELinux label."""
    out: list[str] = []
    for i, vm in enumerate(task.volume_mounts, 1):
        out += at(f"{where}, volume_mount {i}", _mount_problems(vm, tg))
    return out


def _mount_problems(vm: VolumeMount, tg: TaskGroup) -> list[str]:
    out: list[str] = []
    if not vm.volume:
        out.append("volume mount references an empty volume")
    elif vm.volume not in tg.volumes:
        out.append(f"volume mount references undefined volume {vm.volume!r}")
    if vm.propagation_mode not in ("", *PROPAGATION_MODES):
        out.append(
            f"volume mount has an invalid propagation mode {vm.propagation_mode!r} "
            f"(expected one of {', '.join(PROPAGATION_MODES)})"
        )
    if vm.selinux_label not in ("", *SELINUX_LABELS):
        out.append(f"volume mount has an invalid SELinux label {vm.selinux_label!r} (expected z or Z)")
    return out
