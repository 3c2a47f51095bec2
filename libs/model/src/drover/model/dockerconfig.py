"""The `docker` driver's task `config`, with the keys of Nomad's docker driver: its schema
(every key's type, blocks' keys included), checked at job register by drover.model.drivers;
the keys Drover keeps but does not carry out; and readers for its blocks and maps in each
form they arrive in. The jobspec hands a block (`auth { ... }`) and a map written in place
(`labels = { ... }`) as a one-element list of objects, as Nomad's HCL does; the JSON API may
send either that or the object itself. What a value means (paths, modes, limits) is checked
by the client, after interpolation (drover.control.client.dockerspec)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drover.model.durations import parse_duration

Check = Callable[[Any], str | None]

# What Drover stores and returns but does not act on (drover.model.jobwarnings names each one a
# task sets): addresses and aliases on a user-defined network, the announced IPv6 address,
# loading an image from a tarball, cpuset_cpus (ignored by Nomad too), port_map (the
# deprecated mapping of task-level networks), credential helpers' soft failure, and the
# driver's retries over a container that already exists.
DOCKER_KEPT_ONLY = frozenset(
    {
        "advertise_ipv6_address",
        "auth_soft_fail",
        "container_exists_attempts",
        "cpuset_cpus",
        "ipv4_address",
        "ipv6_address",
        "load",
        "network_aliases",
        "port_map",
    }
)


def block(value: Any) -> dict[str, Any]:
    """A block's body ({} when absent): the object, or the first of a list of them."""
    if isinstance(value, list):
        value = value[0] if value else {}
    return dict(value) if isinstance(value, Mapping) else {}


def block_list(value: Any) -> list[dict[str, Any]]:
    """A repeatable block's bodies: a list of objects, or one object."""
    if isinstance(value, Mapping):
        return [dict(value)]
    if isinstance(value, list):
        return [dict(v) for v in value if isinstance(v, Mapping)]
    return []


def scalar_string(value: Any) -> str:
    """A map's value as the string Nomad's HCL converts it to (true, 80, 1.5)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def string_map(value: Any) -> dict[str, str]:
    """A map of strings (Nomad's list(map(string))): an object, or a list of them merged in order."""
    out: dict[str, str] = {}
    for part in block_list(value):
        out.update({str(k): scalar_string(v) for k, v in part.items()})
    return out


# Value checks: None when `v` is of the type, else what is wrong.


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) else f"must be a string, not {v!r}"


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"must be true or false, not {v!r}"


def _number(v: Any) -> str | None:
    # HCL's numbers may reach the model as integral floats; Nomad decodes them into integers.
    ok = (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    return None if ok else f"must be a whole number, not {v!r}"


def _str_list(v: Any) -> str | None:
    ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
    return None if ok else f"must be a list of strings, not {v!r}"


def _duration(v: Any) -> str | None:
    try:
        parse_duration(v)
    except ValueError as e:
        return str(e)
    return None


def _maps(value_check: Check, kind: str) -> Check:
    """A map (an object, or a list of objects) whose values pass `value_check`."""

    def check(v: Any) -> str | None:
        parts = v if isinstance(v, list) else [v]
        for part in parts:
            if not isinstance(part, Mapping) or any(value_check(x) for x in part.values()):
                return f"must be a map of {kind}, not {v!r}"
        return None

    return check


def _scalar(v: Any) -> str | None:
    return None if isinstance(v, str | int | float | bool) else "not a scalar"


_str_map = _maps(_scalar, "strings")
_number_map = _maps(_number, "numbers")


def _body_problems(body: Any, spec: Mapping[str, Check]) -> list[str]:
    if not isinstance(body, Mapping):
        return [f"must be a block, not {body!r}"]
    out: list[str] = []
    for key in sorted(body):
        check = spec.get(key)
        if check is None:
            out.append(f'unknown key "{key}" (known: {", ".join(sorted(spec))})')
        elif problem := check(body[key]):
            out.append(f'"{key}": {problem}')
    return out


def _block(spec: Mapping[str, Check]) -> Check:
    """One block: an object, or a list holding one."""

    def check(v: Any) -> str | None:
        if isinstance(v, list):
            if len(v) > 1:
                return f"only one block is allowed, not {len(v)}"
            if not v:
                return None
            v = v[0]
        return "; ".join(_body_problems(v, spec)) or None

    return check


def _blocks(spec: Mapping[str, Check]) -> Check:
    """A repeatable block: a list of objects, or one object."""

    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return "; ".join(_body_problems(v, spec)) or None
        out = [f"[{i}] {p}" for i, body in enumerate(v) for p in _body_problems(body, spec)]
        return "; ".join(out) or None

    return check


_MOUNT: dict[str, Check] = {
    "type": _str,
    "target": _str,
    "source": _str,
    "readonly": _bool,
    "bind_options": _block({"propagation": _str}),
    "tmpfs_options": _block({"size": _number, "mode": _number}),
    "volume_options": _block(
        {
            "no_copy": _bool,
            "labels": _str_map,
            "driver_config": _block({"name": _str, "options": _str_map}),
        }
    ),
}

DOCKER_SCHEMA: dict[str, Check] = {
    "image": _str,
    "advertise_ipv6_address": _bool,
    "args": _str_list,
    "auth": _block({"username": _str, "password": _str, "email": _str, "server_address": _str}),
    "auth_soft_fail": _bool,
    "cap_add": _str_list,
    "cap_drop": _str_list,
    "cgroupns": _str,
    "command": _str,
    "container_exists_attempts": _number,
    "cpu_cfs_period": _number,
    "cpu_hard_limit": _bool,
    "cpuset_cpus": _str,
    "devices": _blocks({"host_path": _str, "container_path": _str, "cgroup_permissions": _str}),
    "dns_options": _str_list,
    "dns_search_domains": _str_list,
    "dns_servers": _str_list,
    "entrypoint": _str_list,
    "extra_hosts": _str_list,
    "force_pull": _bool,
    "group_add": _str_list,
    "healthchecks": _block({"disable": _bool}),
    "hostname": _str,
    "image_pull_timeout": _duration,
    "init": _bool,
    "interactive": _bool,
    "ipc_mode": _str,
    "ipv4_address": _str,
    "ipv6_address": _str,
    "isolation": _str,
    "labels": _str_map,
    "load": _str,
    "logging": _block({"type": _str, "driver": _str, "config": _str_map}),
    "mac_address": _str,
    "memory_hard_limit": _number,
    # `mount` blocks, and `mounts`: Nomad's pre-1.0 list of them, kept as an alias.
    "mount": _blocks(_MOUNT),
    "mounts": _blocks(_MOUNT),
    "network_aliases": _str_list,
    "network_mode": _str,
    "oom_score_adj": _number,
    "pid_mode": _str,
    "pids_limit": _number,
    "port_map": _number_map,
    "ports": _str_list,
    "privileged": _bool,
    "readonly_rootfs": _bool,
    "runtime": _str,
    "security_opt": _str_list,
    "shm_size": _number,
    "storage_opt": _str_map,
    "sysctl": _str_map,
    "tty": _bool,
    "ulimit": _str_map,
    "userns_mode": _str,
    "uts_mode": _str,
    "volume_driver": _str,
    "volumes": _str_list,
    "work_dir": _str,
}

__all__ = [
    "DOCKER_KEPT_ONLY",
    "DOCKER_SCHEMA",
    "Check",
    "block",
    "block_list",
    "scalar_string",
    "string_map",
]
