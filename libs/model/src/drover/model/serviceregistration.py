"""Nomad's native service discovery (services of provider "nomad"): a registration of one
service of a running alloc (Nomad's ServiceRegistration), how the client forms its ID and its
address, and how the servers list, filter and choose registrations."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from pydantic import Field

from drover.model.allocated import AllocatedResources
from drover.model.base import NomadModel
from drover.model.services import ADDRESS_MODE_AUTO, SERVICE_PROVIDER_NOMAD, Service

# The prefix of the IDs of the services of an alloc's tasks (Nomad's nomadTaskPrefix); a group's
# services are named after "group-<group>" in place of a task.
_TASK_PREFIX = "_nomad-task-"
ADDRESS_MODE_HOST = "host"


class ServiceRegistration(NomadModel):
    """One service instance of an alloc, as the client registered it."""

    id: str = ""
    service_name: str = ""
    namespace: str = "default"
    node_id: str = ""
    datacenter: str = ""
    job_id: str = ""
    alloc_id: str = ""
    tags: list[str] = Field(default_factory=list)
    address: str = ""
    port: int = 0
    create_index: int = 0
    modify_index: int = 0

    def same_as(self, other: ServiceRegistration) -> bool:
        """Whether the two register the same thing (their indexes aside; tags as a set)."""
        skip = {"create_index", "modify_index", "tags"}
        return self.model_dump(exclude=skip) == other.model_dump(exclude=skip) and set(self.tags) == set(
            other.tags
        )

    def hash_with(self, key: str) -> str:
        """The registration's rendezvous weight for `key` (Nomad's HashWith): sha256 over the
        port (8 bytes, big endian), alloc, ID, namespace, address, name, tags and the key."""
        h = hashlib.sha256(self.port.to_bytes(8, "big", signed=self.port < 0))
        for part in (
            self.alloc_id,
            self.id,
            self.namespace,
            self.address,
            self.service_name,
            *self.tags,
            key,
        ):
            h.update(part.encode())
        return h.hexdigest()


class ServiceStub(NomadModel):
    """A service's name and the union of its registrations' tags (Nomad's
    ServiceRegistrationStub)."""

    service_name: str
    tags: list[str] = Field(default_factory=list)


class NamespaceServices(NomadModel):
    """The services of one namespace (Nomad's ServiceRegistrationListStub)."""

    namespace: str
    services: list[ServiceStub] = Field(default_factory=list)


def workload_name(group: str, task: str | None) -> str:
    """What names a service's workload in its ID: the task, or "group-<group>"."""
    return task if task else f"group-{group}"


def service_id(alloc_id: str, workload: str, service: Service) -> str:
    """The registration's ID as Nomad's client forms it (MakeAllocServiceID)."""
    return f"{_TASK_PREFIX}{alloc_id}-{workload}-{service.name}-{service.port_label}"


def service_address(service: Service, resources: AllocatedResources | None) -> tuple[str, int]:
    """The address and port a service advertises (Nomad's GetAddress for modes auto and host,
    the only ones a task without a driver network has): a custom address with the port label's
    value or the label as a number; else the port label's host IP and value, or a numeric
    label on the alloc's address. Raises ValueError for what Nomad's client refuses."""
    mode = service.address_mode or ADDRESS_MODE_AUTO
    label = service.port_label
    mapping = resources.port(label) if resources is not None and label else None
    networks = resources.shared.networks if resources is not None else []
    if mode not in (ADDRESS_MODE_AUTO, ADDRESS_MODE_HOST):
        raise ValueError(f'address_mode "{mode}" needs a driver or alloc network, which the task has not')
    if service.address:
        if mode == ADDRESS_MODE_HOST:
            raise ValueError('cannot use custom advertise address with "host" address mode')
        if not label:
            return service.address, 0
        if mapping is not None:
            return service.address, mapping.value
        return service.address, _numeric_port(label)
    if not label:
        return (networks[0].ip, 0) if len(networks) == 1 else ("", 0)
    if mapping is not None:
        return mapping.host_ip, mapping.value
    ip = networks[0].ip if networks else ""
    return ip, _numeric_port(label)


def _numeric_port(label: str) -> int:
    try:
        port = int(label)
    except ValueError:
        raise ValueError(f"invalid port {label!r}: port label not found") from None
    if port <= 0:
        raise ValueError(f"invalid port {label!r}: port must be >0")
    return port


def nomad_services(services: Iterable[Service]) -> list[Service]:
    """The services the client registers with the servers (provider "nomad")."""
    return [s for s in services if s.provider == SERVICE_PROVIDER_NOMAD]


def with_tag(regs: Iterable[ServiceRegistration], tag: str) -> list[ServiceRegistration]:
    """The registrations that carry `tag` (all of them for an empty tag)."""
    return [r for r in regs if not tag or tag in r.tags]


def parse_choose(param: str) -> tuple[int, str]:
    """`?choose=<n>|<key>`: the count and the key. Raises ValueError when malformed (a count
    that is not a number, or no key)."""
    count, sep, key = param.partition("|")
    try:
        n = int(count)
    except ValueError:
        n = -1
    if not sep or not key or n < 0:
        raise ValueError(f"malformed choose parameter {param!r} (expected <number>|<key>)")
    return n, key


def choose(regs: Sequence[ServiceRegistration], n: int, key: str) -> list[ServiceRegistration]:
    """A stable choice of `n` registrations for `key` (Nomad's rendezvous hashing: the lowest
    hashes first); the same key chooses the same ones while they stay registered."""
    ranked = sorted(regs, key=lambda r: r.hash_with(key))
    return ranked[:n]


def list_stubs(regs: Iterable[ServiceRegistration]) -> list[NamespaceServices]:
    """Each namespace's services with their tags merged, by namespace and name."""
    by_ns: dict[str, dict[str, set[str]]] = {}
    for r in regs:
        by_ns.setdefault(r.namespace, {}).setdefault(r.service_name, set()).update(r.tags)
    return [
        NamespaceServices(
            namespace=ns,
            services=[ServiceStub(service_name=n, tags=sorted(t)) for n, t in sorted(names.items())],
        )
        for ns, names in sorted(by_ns.items())
    ]
