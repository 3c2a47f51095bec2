"""Nomad's namespaces: the catalogue jobs and what they own (allocs, evals, deployments,
variables, services) are grouped by. `default` exists from the start, as Nomad's state store
creates it at bootstrap (index 1), without an event: reads answer it when no write of its own
is stored. What a namespace allows of a job (its Capabilities) is checked at register
(`job_problems`), as Nomad's namespace constraint hook does."""

from __future__ import annotations

import json
import re

from drover.model.base import NomadModel
from drover.model.defaults import DEFAULT_NAMESPACE as DEFAULT_NAMESPACE
from drover.model.job import Job

DEFAULT_DESCRIPTION = "Default shared namespace"
# Every namespace, in a list read or an event stream subscription (Nomad's sentinel).
ALL_NAMESPACES = "*"
NAME_PATTERN = "^[a-zA-Z0-9-]{1,128}$"
_NAME = re.compile(NAME_PATTERN)
MAX_DESCRIPTION = 256
# The region every object of a single-region cluster is in (Nomad's default).
REGION = "global"
_NETWORK_MODE_HOST = "host"


def go_quote(s: str) -> str:
    """`s` as Go's %q writes it (double quotes, escapes), for messages in Nomad's words."""
    return json.dumps(s, ensure_ascii=False)


class NamespaceCapabilities(NomadModel):
    """What jobs of the namespace may use; checked at register. Empty enabled lists allow all."""

    enabled_task_drivers: list[str] | None = None
    disabled_task_drivers: list[str] | None = None
    enabled_network_modes: list[str] | None = None
    disabled_network_modes: list[str] | None = None


class _Governance(NomadModel):
    """A default and the allowed or denied patterns (Nomad Enterprise's governance blocks)."""

    default: str = ""
    allowed: list[str] | None = None
    denied: list[str] | None = None


class NamespaceNodePoolConfiguration(_Governance):
    pass


class NamespaceVaultConfiguration(_Governance):
    pass


class NamespaceConsulConfiguration(_Governance):
    pass


class Namespace(NomadModel):
    """A namespace as Nomad's API shows it."""

    name: str = ""
    description: str = ""
    quota: str = ""
    capabilities: NamespaceCapabilities | None = None
    node_pool_configuration: NamespaceNodePoolConfiguration | None = None
    vault_configuration: NamespaceVaultConfiguration | None = None
    consul_configuration: NamespaceConsulConfiguration | None = None
    meta: dict[str, str] | None = None
    create_index: int = 0
    modify_index: int = 0


def default_namespace() -> Namespace:
    """`default` as Nomad's bootstrap writes it, at index 1."""
    return Namespace(name=DEFAULT_NAMESPACE, description=DEFAULT_DESCRIPTION, create_index=1, modify_index=1)


def builtin(name: str) -> Namespace | None:
    """The namespace that exists without an event (`default`), if `name` is it."""
    return default_namespace() if name == DEFAULT_NAMESPACE else None


def problems(ns: Namespace) -> list[str]:
    """Why Nomad refuses to write `ns` (Namespace.Validate, then the state store's quota
    check), in its words. The governance blocks are Nomad Enterprise's, refused as Nomad's
    community edition refuses them; so is a quota, as there are none to use."""
    out = []
    if not _NAME.match(ns.name):
        out.append(f"invalid name {go_quote(ns.name)}. Must match regex {NAME_PATTERN}")
    if len(ns.description) > MAX_DESCRIPTION:
        out.append(f"description longer than {MAX_DESCRIPTION}")
    for block, what, feature in (
        (ns.node_pool_configuration, "node pool", "Node Pools Governance"),
        (ns.vault_configuration, "vault", "Multi-Cluster Vault"),
        (ns.consul_configuration, "consul", "Multi-Cluster Consul"),
    ):
        if block is not None:
            out.append(f"invalid {what} configuration: {feature} is unlicensed.")
    if ns.quota:
        out.append(f"namespace {go_quote(ns.name)} using non-existent quota {go_quote(ns.quota)}")
    return out


def _allowed(value: str, enabled: list[str] | None, disabled: list[str] | None) -> bool:
    """Nomad's rule: allowed if no list enables anything or one enables it, unless disabled."""
    return (not enabled or value in enabled) and value not in (disabled or [])


def _listed(values: list[str]) -> str:
    """A list as Go's %q writes a []string: `["a" "b"]`."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def job_problems(job: Job, ns: Namespace | None) -> list[str]:
    """Why the job may not be registered in its namespace `ns` (None: there is no such
    namespace), in Nomad's words: every task driver and group network mode the namespace's
    Capabilities do not allow."""
    if ns is None:
        return [f"job {go_quote(job.id)} is in nonexistent namespace {go_quote(job.namespace)}"]
    caps = ns.capabilities
    if caps is None:
        return []
    out = []
    drivers = [
        t.driver
        for g in job.task_groups
        for t in g.tasks
        if not _allowed(t.driver, caps.enabled_task_drivers, caps.disabled_task_drivers)
    ]
    if len(drivers) == 1:
        out.append(f"used task driver {go_quote(drivers[0])} is not allowed in namespace {go_quote(ns.name)}")
    elif drivers:
        out.append(f"used task drivers {_listed(drivers)} are not allowed in namespace {go_quote(ns.name)}")
    modes = [
        mode
        for g in job.task_groups
        for n in g.networks
        if not _allowed(
            mode := n.mode or _NETWORK_MODE_HOST, caps.enabled_network_modes, caps.disabled_network_modes
        )
    ]
    if len(modes) == 1:
        out.append(
            f"used group network mode {go_quote(modes[0])} is not allowed in namespace {go_quote(ns.name)}"
        )
    elif modes:
        out.append(
            f"used group network modes {_listed(modes)} are not allowed in namespace {go_quote(ns.name)}"
        )
    return out


def matching(namespaces: list[Namespace], prefix: str) -> list[Namespace]:
    """Those whose name starts with `prefix`, by name."""
    return sorted((n for n in namespaces if n.name.startswith(prefix)), key=lambda n: n.name)


def in_regions(namespace: str, what: str) -> str:
    """Nomad's refusal to delete a namespace that still has `what` (its only region named)."""
    return f"namespace {go_quote(namespace)} has {what} in regions: [{REGION}]"
