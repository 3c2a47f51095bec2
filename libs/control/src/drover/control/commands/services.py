"""Commands on service registrations: a client registers the services of its allocs and
removes those of allocs that stopped; an operator removes one (Nomad's ServiceRegistration
Upsert and DeleteByID)."""

from __future__ import annotations

import ipaddress

from drover.control.change import Change
from drover.control.commands.reads import ClusterReads
from drover.control.errors import Invalid, NotFound
from drover.model.events import ServicesDeregistered, ServicesRegistered
from drover.model.serviceregistration import ServiceRegistration


def _problems(reg: ServiceRegistration, i: int) -> list[str]:
    where = f"Services[{i}]"
    out = [f"{where}: {name} is required" for name, value in
           (("ID", reg.id), ("ServiceName", reg.service_name), ("AllocID", reg.alloc_id),
            ("NodeID", reg.node_id), ("JobID", reg.job_id), ("Namespace", reg.namespace)) if not value]  # fmt: skip
    try:
        unspecified = ipaddress.ip_address(reg.address).is_unspecified
    except ValueError:
        unspecified = False  # a hostname
    if unspecified:
        out.append(f"{where}: invalid service registration address {reg.address!r}")
    if not 0 <= reg.port <= 65535:
        out.append(f"{where}: Port {reg.port} is out of range")
    return out


def register(
    reads: ClusterReads, node_id: str, services: list[ServiceRegistration], deregister: list[str]
) -> Change:
    """A client's registrations of its allocs' services, and its removals (IDs) of those of
    allocs that stopped. Each registration names a known alloc of its job on the reporting
    node; a removal of one no longer registered is no error (the servers may have dropped it)."""
    problems = [p for i, reg in enumerate(services) for p in _problems(reg, i)]
    if node_id:
        problems += [f"Services[{i}]: NodeID {r.node_id!r} is not the reporting node {node_id!r}"
                     for i, r in enumerate(services) if r.node_id and r.node_id != node_id]  # fmt: skip
    if problems:
        raise Invalid.of(problems)
    allocs = reads.allocs_by_id(sorted({r.alloc_id for r in services}))
    missing = sorted({r.alloc_id for r in services} - allocs.keys())
    if missing:
        raise NotFound(f"unknown allocations: {', '.join(missing)}")
    wrong = [
        f"Services[{i}]: alloc {r.alloc_id} is of job {a.namespace}/{a.job_id} on node {a.node_id}"
        for i, r in enumerate(services)
        if (a := allocs[r.alloc_id]).job_id != r.job_id
        or a.namespace != r.namespace
        or a.node_id != r.node_id
    ]
    if wrong:
        raise Invalid.of(wrong)
    events: list[ServicesRegistered | ServicesDeregistered] = []
    if deregister:
        events.append(ServicesDeregistered(node_id=node_id, ids=list(dict.fromkeys(deregister))))
    if services:
        events.append(ServicesRegistered(node_id=node_id, services=services))
    return Change.of(events)


def delete(reads: ClusterReads, namespace: str, name: str, service_id: str) -> Change:
    """An operator removes one registration of service `name` (404 if there is none)."""
    reg = reads.service(service_id)
    if reg is None or reg.service_name != name or (namespace != "*" and reg.namespace != namespace):
        raise NotFound(f"service registration {service_id!r} of service {name!r} not found")
    return Change.of([ServicesDeregistered(node_id=reg.node_id, ids=[service_id])])
