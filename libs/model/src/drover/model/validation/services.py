"""Services, a group's and its tasks' (structs Service.Validate, TaskGroup.validateServices and
validateServices): names, address modes, providers, the ports they name, and their checks
(drover.model.validation.checks)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from drover.model.job import Task, TaskGroup
from drover.model.services import (
    ADDRESS_MODE_ALLOC,
    ADDRESS_MODE_ALLOC_IPV6,
    ADDRESS_MODE_AUTO,
    ADDRESS_MODE_DRIVER,
    ADDRESS_MODES,
    CHECK_SCRIPT,
    CONSUL_SERVICE_KINDS,
    ON_UPDATE_MODES,
    SERVICE_PROVIDER_CONSUL,
    SERVICE_PROVIDER_NOMAD,
    SERVICE_PROVIDERS,
    Service,
    ServiceCheck,
)
from drover.model.validation.checks import check_problems, check_where, effective_port, requires_port
from drover.model.validation.places import at

# RFC 1123: letters, digits and dashes, at most 63, neither first nor last a dash.
SERVICE_NAME = re.compile(r"^(?:[a-z0-9]|[a-z0-9][a-z0-9\-]{0,61}[a-z0-9])$", re.IGNORECASE)
_INTERPOLATION = re.compile(r"\$\{[^}]*\}")


def group_services_at(where: str, tg: TaskGroup) -> list[str]:
    """The problems of a group's services and of its tasks' services taken together
    (uniqueness, one provider), each placed at its service."""
    out: list[str] = []
    tasks = {t.name for t in tg.tasks}
    labels = port_labels(tg)
    for i, svc in enumerate(tg.services, 1):
        svc_where = f"{where}, {_service_place(svc, i)}"
        out += service_at(svc_where, svc)
        out += _group_service_at(svc_where, svc, tg.name, tasks, labels)
    out += at(where, _uniqueness_problems(tg))
    providers = sorted({s.provider for _, s in _all_services(tg)})
    if len(providers) > 1:
        out.append(
            f"{where}: services use more than one provider ({', '.join(providers)}); a group's "
            "services must all use the same provider"
        )
    return out


def task_services_at(where: str, task: Task, tg: TaskGroup) -> list[str]:
    """The problems of a task's services, each placed at its service."""
    out: list[str] = []
    labels = port_labels(tg, task)
    for i, svc in enumerate(task.services, 1):
        svc_where = f"{where}, {_service_place(svc, i)}"
        out += service_at(svc_where, svc)
        out += _task_service_at(svc_where, svc, task, labels)
    return out


def port_labels(tg: TaskGroup, task: Task | None = None) -> set[str]:
    """The port labels a service may name: the group network's, and a task's own networks'."""
    labels = {p.label for p in tg.networks[0].ports()} if tg.networks else set()
    if task is not None:
        labels |= {p.label for net in task.resources.networks for p in net.ports()}
    return labels


def service_at(where: str, svc: Service) -> list[str]:
    """One service on its own, and its checks by its provider's rules (structs Service.Validate)."""
    out: list[str] = []
    if not SERVICE_NAME.match(_INTERPOLATION.sub("ENV-VAR", svc.name)):
        out.append(
            f"service name {svc.name!r} must be valid per RFC 1123: letters, digits and dashes only, "
            "at most 63 characters"
        )
    if svc.address_mode not in ("", *ADDRESS_MODES):
        out.append(
            f"address_mode {svc.address_mode!r} is unknown (expected one of {', '.join(ADDRESS_MODES)})"
        )
    elif svc.address_mode not in ("", ADDRESS_MODE_AUTO) and svc.address:
        out.append(f"address_mode must be {ADDRESS_MODE_AUTO!r} when address is set")
    if svc.on_update not in ("", *ON_UPDATE_MODES):
        out.append(f"on_update {svc.on_update!r} is unknown (expected one of {', '.join(ON_UPDATE_MODES)})")
    if svc.provider not in SERVICE_PROVIDERS:
        out.append(f"provider {svc.provider!r} is unknown (expected consul or nomad)")
    elif svc.provider == SERVICE_PROVIDER_CONSUL and svc.kind not in CONSUL_SERVICE_KINDS:
        out.append(f"kind {svc.kind!r} is not a Consul service kind")
    elif svc.provider == SERVICE_PROVIDER_NOMAD and svc.connect is not None:
        out.append("a service with provider nomad cannot have a connect block")
    if svc.identity is not None and not svc.identity.get("Audience"):
        out.append("service identity must provide at least one audience (aud)")
    out = at(where, out)
    for i, check in enumerate(svc.checks, 1):
        check_at = f"{where}, {check_where(check, i)}"
        if requires_port(check) and not effective_port(check, svc) and not check.expose:
            out.append(f"{check_at}: check requires a port but neither it nor its service has one")
        elif svc.provider in SERVICE_PROVIDERS:
            out += at(check_at, check_problems(check, svc.provider))
    return out


def _group_service_at(where: str, svc: Service, group: str, tasks: set[str], labels: set[str]) -> list[str]:
    """A group service's: no driver address mode, checks naming tasks of the group (a script
    check runs in one: it must name it), the ports it names. Nomad leaves a group service's port
    to the client, which fails the alloc; it is refused here at register instead."""
    out: list[str] = []
    if svc.address_mode == ADDRESS_MODE_DRIVER:
        out.append(f'{where}: address_mode "driver" is only for services in a task')
    for i, check in enumerate(svc.checks, 1):
        check_at = f"{where}, {check_where(check, i)}"
        if check.task_name:
            if check.address_mode == ADDRESS_MODE_DRIVER:
                out.append(f'{check_at}: address_mode "driver" is only for checks of services in a task')
            if check.task_name not in tasks:
                out.append(f"{check_at}: refers to non-existent task {check.task_name!r}")
        elif check.type.lower() == CHECK_SCRIPT and not svc.task_name:
            # Nomad's words, with the name its canonicalization gives a check without one.
            name = check.name or f'service: "{svc.name}" check'
            out.append(
                f"{check_at}: Service [{group}]->{svc.name} or Check {name} must specify task parameter"
            )
    named = {svc.port_label} if svc.port_label else set()
    named |= {effective_port(c, svc) for c in svc.checks if requires_port(c)}
    missing = sorted(p for p in named - labels if p and not _numeric(p))
    return out + [f"{where}: port label {p!r} does not exist" for p in missing]


def _task_service_at(where: str, svc: Service, task: Task, labels: set[str]) -> list[str]:
    """A task service's: no alloc address modes, no connect, its task and its checks' tasks are
    its own, check names unique, and every port it or its checks name exists (validateServices)."""
    out: list[str] = []
    if svc.address_mode in (ADDRESS_MODE_ALLOC, ADDRESS_MODE_ALLOC_IPV6):
        out.append(f"address_mode {svc.address_mode!r} is only for services in a group")
    if svc.connect is not None:
        out.append("a connect block is only for services in a group")
    if svc.task_name and svc.task_name != task.name:
        out.append(f"may only name the task it belongs to, not {svc.task_name!r}")
    named: set[str] = set()
    if svc.port_label and not (svc.address_mode == ADDRESS_MODE_DRIVER and _numeric(svc.port_label)):
        named.add(svc.port_label)
    out = at(where, out)
    seen: set[str] = set()
    for i, check in enumerate(svc.checks, 1):
        check_at = f"{where}, {check_where(check, i)}"
        if check.name and check.name in seen:
            out.append(f"{check_at}: check {check.name!r} is duplicate")
        seen.add(check.name)
        out += at(check_at, _task_check_problems(check, svc, task, named))
    return out + [f"{where}: port label {p!r} does not exist" for p in sorted(named - labels)]


def _task_check_problems(check: ServiceCheck, svc: Service, task: Task, named: set[str]) -> list[str]:
    """A task service's check: its task, its address mode, and its port (added to `named`)."""
    out: list[str] = []
    if check.task_name and check.task_name != task.name:
        out.append(f"may only name the task it belongs to, not {check.task_name!r}")
    if check.address_mode in (ADDRESS_MODE_ALLOC, ADDRESS_MODE_ALLOC_IPV6):
        out.append(f"address_mode {check.address_mode!r} is only for checks of group services")
    port = effective_port(check, svc)
    if not requires_port(check) or not port:
        return out
    if not _numeric(port):
        named.add(port)
    elif check.address_mode != ADDRESS_MODE_DRIVER:
        out.append(f'cannot use a numeric port {port} without address_mode "driver"')
    elif int(port) <= 0:
        out.append(f"has invalid numeric port {port}")
    return out


def _uniqueness_problems(tg: TaskGroup) -> list[str]:
    """No two services of a group with the same name, task and port (their IDs would clash)."""
    seen: set[tuple[str, str, str]] = set()
    dupes: list[str] = []
    for owner, svc in _all_services(tg):
        key = (owner, svc.name, svc.port_label)
        if key in seen:
            dupes.append(f"{owner}->{svc.name}" + (f":{svc.port_label}" if svc.port_label else ""))
        seen.add(key)
    return [f"services are not unique: {', '.join(sorted(set(dupes)))}"] if dupes else []


def _all_services(tg: TaskGroup) -> Iterator[tuple[str, Service]]:
    for task in tg.tasks:
        for svc in task.services:
            yield task.name, svc
    for svc in tg.services:
        yield "group", svc


def _service_place(svc: Service, index: int) -> str:
    return f"service {svc.name!r}" if svc.name else f"service {index}"


def _numeric(port: str) -> bool:
    return port.lstrip("-").isdecimal()


__all__ = ["group_services_at", "port_labels", "service_at", "task_services_at"]
