"""What a placement gives its alloc (Nomad's AllocatedResources): each task's CPU and memory,
its lifecycle, the group's disk, and the network with the ports assigned on the node. A task's
memory_max is given only where the scheduler configuration allows memory oversubscription
(Nomad's BinPackIterator): otherwise the task is limited to its memory."""

from __future__ import annotations

from drover.model.allocated import (
    AllocatedCpuResources,
    AllocatedMemoryResources,
    AllocatedResources,
    AllocatedSharedResources,
    AllocatedTaskResources,
)
from drover.model.base import copy_with, unvalidated
from drover.model.job import TaskGroup
from drover.model.network import NETWORK_MODE_HOST, AllocatedPortMapping, NetworkResource, Port


def group_allocation(tg: TaskGroup, oversubscription: bool = False) -> AllocatedResources:
    """The part every alloc of the group shares: tasks, lifecycles and disk, no ports; each
    task's memory_max with `oversubscription` alone."""
    disk = tg.ephemeral_disk.size_mb if tg.ephemeral_disk is not None else 0
    return AllocatedResources(
        tasks={
            t.name: AllocatedTaskResources(
                cpu=AllocatedCpuResources(cpu_shares=t.resources.cpu),
                memory=AllocatedMemoryResources(
                    memory_mb=t.resources.memory_mb,
                    memory_max_mb=t.resources.memory_max_mb if oversubscription else 0,
                ),
            )
            for t in tg.tasks
        },
        task_lifecycles={t.name: t.lifecycle for t in tg.tasks},
        shared=AllocatedSharedResources(disk_mb=disk),
    )


def with_ports(
    base: AllocatedResources, ask: NetworkResource, offer: list[AllocatedPortMapping], ip: str
) -> AllocatedResources:
    """`base` with the group's network as given on the node: its address, its static ports
    and its dynamic ports with the values assigned (Nomad's AllocatedSharedResources)."""
    # Built unvalidated: every member is already of its type, and this runs once per placement.
    value = {p.label: p for p in offer}
    network = copy_with(
        ask,
        {
            "mode": ask.mode or NETWORK_MODE_HOST,
            "ip": ip,
            "reserved_ports": _given(ask.reserved_ports, value),
            "dynamic_ports": _given(ask.dynamic_ports, value),
        },
    )
    shared = unvalidated(
        AllocatedSharedResources,
        {"networks": [network], "disk_mb": base.shared.disk_mb, "ports": offer},
        _SHARED_SET,
    )
    return unvalidated(
        AllocatedResources,
        {"tasks": base.tasks, "task_lifecycles": base.task_lifecycles, "shared": shared},
        _RESOURCES_SET,
    )


def updated_in_place(
    tg: TaskGroup, old: AllocatedResources | None, oversubscription: bool = False
) -> AllocatedResources:
    """An alloc updated in place: the group's new task resources, its network and ports as
    they were given (a change of ports is a destructive update, never an in-place one)."""
    base = group_allocation(tg, oversubscription)
    if old is None or not (old.shared.networks or old.shared.ports):
        return base
    shared = base.shared.model_copy(update={"networks": old.shared.networks, "ports": old.shared.ports})
    return base.model_copy(update={"shared": shared})


def _given(ports: list[Port], value: dict[str, AllocatedPortMapping]) -> list[Port]:
    """The asked ports with the values and mappings given."""
    out = []
    for p in ports:
        got = value.get(p.label)
        if got is not None:
            p = unvalidated(Port, {**p.__dict__, "value": got.value, "to": got.to}, _PORT_SET)
        out.append(p)
    return out


_SHARED_SET = set(AllocatedSharedResources.model_fields)
_RESOURCES_SET = set(AllocatedResources.model_fields)
_PORT_SET = set(Port.model_fields)
