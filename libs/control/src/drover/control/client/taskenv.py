"""A task's environment, as Nomad's task environment builder makes it: the `NOMAD_*` variables
(directories, identities, limits, meta, ports), the task's own `env` interpolated, and the
`${...}` interpolation of strings against that environment and the node (`${attr.x}`,
`${meta.x}`, `${node.unique.id}`...). Pure: the agent hands in the alloc, job, task, node and
the task's directories."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drover.model.alloc import Allocation
from drover.model.allocated import AllocatedResources
from drover.model.job import Job, Task
from drover.model.network import AllocatedPortMapping, NetworkResource, Port
from drover.model.node import Node

# The prefixes whose keys are cleaned of characters a shell variable cannot hold.
_CLEANED_PREFIXES = ("NOMAD_ADDR_", "NOMAD_IP_", "NOMAD_PORT_", "NOMAD_HOST_PORT_", "NOMAD_META_")
# What `${...}` may hold (Nomad's helper/args): letters, digits, `_`, `-` and `.`.
_REFERENCE = re.compile(r"\$\{[a-zA-Z0-9_\-.]+\}")


@dataclass(frozen=True)
class TaskDirs:
    """The directories a task is told of, as paths on this host (raw_exec and mock have no
    filesystem isolation): the alloc's shared dir, the task's local and secrets dirs."""

    alloc_dir: str
    local_dir: str
    secrets_dir: str


def replace_env(text: str, *maps: Mapping[str, str]) -> str:
    """Every `${name}` in `text` whose name one of `maps` holds (the first that does), replaced
    by its value; the others are left as written."""

    def value(m: re.Match[str]) -> str:
        name = m.group(0)[2:-1]
        for env in maps:
            if name in env:
                return env[name]
        return m.group(0)

    return _REFERENCE.sub(value, text) if "${" in text else text


def interpolate(value: Any, *maps: Mapping[str, str]) -> Any:
    """`value` (a driver's config: strings, lists, maps) with `replace_env` applied to every
    string in it, keys included."""
    if isinstance(value, str):
        return replace_env(value, *maps)
    if isinstance(value, list):
        return [interpolate(v, *maps) for v in value]
    if isinstance(value, dict):
        return {replace_env(str(k), *maps): interpolate(v, *maps) for k, v in value.items()}
    return value


def clean_env_var(name: str) -> str:
    """`name` with every character other than letters, `_`, `.` and (past the first) digits
    made `_`."""
    return "".join(
        c if c in "_." or ("a" <= c <= "z") or ("A" <= c <= "Z") or (i > 0 and c.isdigit()) else "_"
        for i, c in enumerate(name)
    )


def node_attributes(node: Node, region: str) -> dict[str, str]:
    """What `${node.*}`, `${attr.*}` and `${meta.*}` name."""
    out = {
        "node.region": region,
        "node.unique.id": node.id,
        "node.unique.name": node.name,
        "node.class": node.node_class,
        "node.datacenter": node.datacenter,
        "node.pool": node.node_pool,
    }
    out.update({f"attr.{k}": v for k, v in node.attributes.items()})
    out.update({f"meta.{k}": v for k, v in node.meta.items()})
    return out


def combined_meta(job: Job, group: str, task: Task) -> dict[str, str]:
    """The job's meta, its group's over it, the task's over both."""
    tg = job.lookup_task_group(group)
    return {**job.meta, **(tg.meta if tg is not None else {}), **task.meta}


def join_host_port(host: str, port: int | str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _limits(task: Task, allocated: AllocatedResources | None) -> dict[str, str]:
    tr = allocated.tasks.get(task.name) if allocated is not None else None
    if tr is not None:
        cpu, cores = tr.cpu.cpu_shares, tr.cpu.reserved_cores
        mem, mem_max = tr.memory.memory_mb, tr.memory.memory_max_mb
    else:
        cpu, cores = task.resources.cpu, []
        mem, mem_max = task.resources.memory_mb, task.resources.memory_max_mb
    out = {}
    if mem:
        out["NOMAD_MEMORY_LIMIT"] = str(mem)
    if mem_max:
        out["NOMAD_MEMORY_MAX_LIMIT"] = str(mem_max)
    if cpu:
        out["NOMAD_CPU_LIMIT"] = str(cpu)
    if cores:
        out["NOMAD_CPU_CORES"] = core_ranges(cores)
    return out


def core_ranges(cores: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5", as cgroups write cpusets."""
    parts: list[str] = []
    ids = sorted(set(cores))
    low = high = ids[0]
    for core in [*ids[1:], None]:
        if core is not None and core == high + 1:
            high = core
            continue
        parts.append(str(low) if low == high else f"{low}-{high}")
        if core is not None:
            low = high = core
    return ",".join(parts)


def _task_network_env(networks: Sequence[NetworkResource]) -> dict[str, str]:
    """A task's own networks (the deprecated task-level `network`): the host's values."""
    out: dict[str, str] = {}
    for net in networks:
        family = "NOMAD_IPv6_" if ":" in net.ip else "NOMAD_IPv4_"
        for p in net.ports():
            out[f"NOMAD_IP_{p.label}"] = out[f"{family}{p.label}"] = net.ip
            out[f"NOMAD_HOST_PORT_{p.label}"] = out[f"NOMAD_PORT_{p.label}"] = str(p.value)
            out[f"NOMAD_ADDR_{p.label}"] = join_host_port(net.ip, p.value)
    return out


def _group_port(p: Port) -> dict[str, str]:
    return {
        f"NOMAD_PORT_{p.label}": str(p.to if p.to > 0 else p.value),
        f"NOMAD_HOST_PORT_{p.label}": str(p.value),
    }


def _allocated_port(p: AllocatedPortMapping) -> dict[str, str]:
    """A port of the alloc's: the host's address, and the port the task binds (its `to` when
    mapped, else the host port: `to` 0 or -1)."""
    bind = str(p.to if p.to > 0 else p.value)
    addr = join_host_port(p.host_ip, p.value)
    return {
        f"NOMAD_ADDR_{p.label}": addr,
        f"NOMAD_HOST_ADDR_{p.label}": addr,
        f"NOMAD_IP_{p.label}": p.host_ip,
        f"NOMAD_HOST_IP_{p.label}": p.host_ip,
        f"NOMAD_PORT_{p.label}": bind,
        f"NOMAD_ALLOC_PORT_{p.label}": bind,
        f"NOMAD_HOST_PORT_{p.label}": str(p.value),
    }


def port_env(allocated: AllocatedResources | None, task: str) -> dict[str, str]:
    """The port variables of one task of an alloc: its own networks', the other tasks' (named
    `NOMAD_ADDR_<task>_<label>`...), the group networks' and then the alloc's ports, each over
    the one before, as Nomad lays them. NOMAD_ALLOC_IP_* and NOMAD_ALLOC_ADDR_* come from a
    bridge network's status, which host mode has not."""
    if allocated is None:
        return {}
    own = allocated.tasks.get(task)
    out = _task_network_env(own.networks if own is not None else [])
    for name, res in allocated.tasks.items():
        if name == task:
            continue
        for net in res.networks:
            for p in net.ports():
                out[f"NOMAD_ADDR_{name}_{p.label}"] = join_host_port(net.ip, p.value)
                out[f"NOMAD_IP_{name}_{p.label}"] = net.ip
                out[f"NOMAD_PORT_{name}_{p.label}"] = str(p.value)
    for net in allocated.shared.networks:
        for p in net.ports():
            out.update(_group_port(p))
    for mapping in allocated.shared.ports:
        out.update(_allocated_port(mapping))
    return out


def _identity(alloc: Allocation, job: Job, task: Task, node: Node, region: str) -> dict[str, str]:
    out = {
        "NOMAD_ALLOC_ID": alloc.id,
        "NOMAD_SHORT_ALLOC_ID": alloc.id[:8],
        "NOMAD_ALLOC_NAME": alloc.name,
        "NOMAD_GROUP_NAME": alloc.task_group,
        "NOMAD_TASK_NAME": task.name,
        "NOMAD_JOB_ID": job.id,
        "NOMAD_JOB_NAME": job.name or job.id,
        "NOMAD_JOB_PARENT_ID": job.parent_id,
        "NOMAD_DC": node.datacenter,
        "NOMAD_NAMESPACE": alloc.namespace,
        "NOMAD_REGION": region,
    }
    if alloc.index() >= 0:
        out["NOMAD_ALLOC_INDEX"] = str(alloc.index())
    return {k: v for k, v in out.items() if v}


def _meta(job: Job, group: str, task: Task) -> dict[str, str]:
    """NOMAD_META_<key>, as written and upper-cased; a dispatched job's optional meta keys are
    there (empty) even when the dispatch did not set them."""
    out: dict[str, str] = {}
    if job.dispatched and job.parameterized_job is not None:
        for key in job.parameterized_job.meta_optional:
            out[f"NOMAD_META_{key.upper()}"] = out[f"NOMAD_META_{key}"] = ""
    for key, value in combined_meta(job, group, task).items():
        out[f"NOMAD_META_{key.upper()}"] = out[f"NOMAD_META_{key}"] = value
    return out


def task_env(
    alloc: Allocation,
    job: Job,
    task: Task,
    node: Node,
    dirs: TaskDirs,
    region: str,
    hook_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment `task` of `alloc` runs with (the host's own environment aside): Nomad's
    variables, then the task's meta, its `env` and `hook_env` (the agent's, e.g. host volume
    paths), each interpolated against what is set before it and the node."""
    attrs = node_attributes(node, region)
    env: dict[str, str] = {
        "NOMAD_ALLOC_DIR": dirs.alloc_dir,
        "NOMAD_TASK_DIR": dirs.local_dir,
        "NOMAD_SECRETS_DIR": dirs.secrets_dir,
        **_limits(task, alloc.allocated_resources),
        **_identity(alloc, job, task, node, region),
        **port_env(alloc.allocated_resources, task.name),
    }
    for key, value in _meta(job, alloc.task_group, task).items():
        env[replace_env(key, attrs, env)] = replace_env(value, attrs, env)
    for key, value in task.env.items():
        env[key] = replace_env(value, attrs, env)
    for key, value in (hook_env or {}).items():
        env[key] = replace_env(value, attrs, env)
    return {(clean_env_var(k) if k.startswith(_CLEANED_PREFIXES) else k): v for k, v in env.items()}


def interpolation_maps(env: Mapping[str, str], node: Node, region: str) -> tuple[Mapping[str, str], ...]:
    """What `${...}` in a task's config and artifacts is looked up in: its environment, then
    the node's attributes."""
    return (env, node_attributes(node, region))
