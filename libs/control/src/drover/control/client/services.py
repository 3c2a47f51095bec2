"""The service registrations a client keeps for an alloc (Nomad's nsd provider): each
`provider = "nomad"` service of its group once the alloc runs, and each of a task's once that
task runs, at the address its port label was given on the node; and what to send the
servers to get from the registrations they hold to those."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from drover.model.alloc import Allocation
from drover.model.job import TaskGroup
from drover.model.serviceregistration import (
    ServiceRegistration,
    nomad_services,
    service_address,
    service_id,
    workload_name,
)
from drover.model.services import Service


@dataclass
class Workloads:
    """An alloc's registrations, and the services it could not register (with why)."""

    registrations: list[ServiceRegistration] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def alloc_registrations(
    alloc: Allocation,
    tg: TaskGroup,
    node_id: str,
    datacenter: str,
    *,
    alloc_running: bool,
    running_tasks: Collection[str],
) -> Workloads:
    """The registrations of `alloc`'s nomad services: its group's while it runs, each task's
    while that task runs. A canary registers its canary tags where the service has any."""
    out = Workloads()
    workloads: list[tuple[str | None, list[Service]]] = []
    if alloc_running:
        workloads.append((None, tg.services))
    workloads.extend((t.name, t.services) for t in tg.tasks if t.name in running_tasks)
    for task, services in workloads:
        for svc in nomad_services(services):
            try:
                address, port = service_address(svc, alloc.allocated_resources)
            except ValueError as e:
                out.problems.append(f'service "{svc.name}": {e}')
                continue
            tags = svc.canary_tags if alloc.is_canary() and svc.canary_tags else svc.tags
            out.registrations.append(
                ServiceRegistration(
                    id=service_id(alloc.id, workload_name(tg.name, task), svc),
                    service_name=svc.name,
                    namespace=alloc.namespace,
                    node_id=node_id,
                    datacenter=datacenter,
                    job_id=alloc.job_id,
                    alloc_id=alloc.id,
                    tags=list(tags),
                    address=address,
                    port=port,
                )
            )
    return out


def registration_diff(
    want: Mapping[str, ServiceRegistration], sent: Mapping[str, ServiceRegistration]
) -> tuple[list[ServiceRegistration], list[str]]:
    """What to register (new or changed) and what to remove (IDs no longer wanted) to get the
    servers from `sent` to `want`."""
    upsert = [r for i, r in want.items() if i not in sent or not sent[i].same_as(r)]
    remove = [i for i in sent if i not in want]
    return upsert, remove
