"""Change detection between job versions: which edits need a new alloc (destructive) and which
the existing alloc can take in place (Nomad's tasksUpdated). What the client sets up once,
before a task starts (its network and ports, volumes and mounts, artifacts, templates, vault
token, identities, secrets), cannot change under a running task."""

from __future__ import annotations

from drover.model import Job, Task, TaskGroup
from drover.model.integrations import Consul
from drover.model.job import RestartPolicy
from drover.model.network import NetworkResource


def _task_changed(a: Task, b: Task) -> bool:
    return (
        a.driver != b.driver
        or a.user != b.user
        or a.config != b.config
        or a.env != b.env
        or a.meta != b.meta
        or a.kill_timeout != b.kill_timeout
        or a.leader != b.leader
        or a.resources != b.resources
        or _task_files_changed(a, b)
        or _render_templates(a.restart_policy) != _render_templates(b.restart_policy)
        or (
            a.log_config is not None
            and b.log_config is not None
            and a.log_config.disabled != b.log_config.disabled
        )
    )


def _task_files_changed(a: Task, b: Task) -> bool:
    """What the client puts in place before the task starts: artifacts, templates, volume
    mounts, a vault token, identities, secrets, its Consul namespace, a CSI plugin's mounts."""
    return (
        a.artifacts != b.artifacts
        or a.templates != b.templates
        or a.volume_mounts != b.volume_mounts
        or a.vault != b.vault
        or a.identity != b.identity
        or a.identities != b.identities
        or a.secrets != b.secrets
        or consul_updated(a.consul, b.consul)
        or a.csi_plugin_config != b.csi_plugin_config
    )


def networks_updated(a: list[NetworkResource], b: list[NetworkResource]) -> bool:
    """Networks changed in what an alloc was given: their number, mode, hostname, DNS, CNI args,
    or their ports' labels, static values, mapped ports and host networks (a dynamic port's
    value is the node's, so it never counts)."""
    if len(a) != len(b):
        return True
    for an, bn in zip(a, b, strict=True):
        if (an.mode, an.mbits, an.hostname, an.dns, an.cni) != (
            bn.mode,
            bn.mbits,
            bn.hostname,
            bn.dns,
            bn.cni,
        ):
            return True
        if _port_map(an) != _port_map(bn):
            return True
    return False


def _port_map(n: NetworkResource) -> list[tuple[str, int, int, str]]:
    return [(p.label, p.value, p.to, p.host_network) for p in n.reserved_ports] + [
        (p.label, -1, p.to, p.host_network) for p in n.dynamic_ports
    ]


def consul_updated(a: Consul | None, b: Consul | None) -> bool:
    """A Consul namespace changed, or (both set) its cluster or partition: its network
    connections are no longer valid."""
    if (a.namespace if a else "") != (b.namespace if b else ""):
        return True
    return a is not None and b is not None and (a.cluster, a.partition) != (b.cluster, b.partition)


def _render_templates(policy: RestartPolicy | None) -> bool:
    return policy is not None and policy.render_templates


def _connect_updated(a: TaskGroup, b: TaskGroup) -> bool:
    """A Consul Connect service changed its connect block, port or cluster (its sidecar is
    plumbed from them)."""
    others = {s.name: s for s in b.services}
    for svc in a.services:
        other = others.get(svc.name)
        if svc.connect is None or other is None:
            continue
        if (svc.connect, svc.port_label, svc.cluster) != (other.connect, other.port_label, other.cluster):
            return True
    return False


def _group_changed(a: TaskGroup, b: TaskGroup) -> bool:
    return (
        len(a.tasks) != len(b.tasks)
        or a.ephemeral_disk != b.ephemeral_disk
        or a.meta != b.meta
        or networks_updated(a.networks, b.networks)
        or consul_updated(a.consul, b.consul)
        or _connect_updated(a, b)
        or a.volumes != b.volumes
        or _render_templates(a.restart_policy) != _render_templates(b.restart_policy)
    )


def tasks_updated(new: Job, old: Job, group: str) -> bool:
    """True when the group's allocs must be replaced: tasks added, removed or changed (driver,
    config, env, user, resources, meta, artifacts, templates, mounts, vault, identities,
    secrets), the group's ephemeral disk, networks and ports, volumes or Consul changed, or job
    meta. Count, constraints, affinities, spreads, services, the update, reschedule and restart
    policies (but restart's render_templates) are in place."""
    a, b = new.lookup_task_group(group), old.lookup_task_group(group)
    if a is None or b is None:
        return True
    if _group_changed(a, b) or new.meta != old.meta:
        return True
    old_tasks = {t.name: t for t in b.tasks}
    for t in a.tasks:
        o = old_tasks.get(t.name)
        if o is None or _task_changed(t, o):
            return True
    return False
