"""A docker task's container as Nomad's docker driver creates it (createContainerConfig): the
task's `config` and what the agent knows, turned into the keyword arguments of the Docker SDK's
`containers.create`. Every problem is collected and raised together. Pure: the agent hands in
the alloc's ports, directories, host volumes and limits; the driver pulls the image (`image`,
`auth`, `force_pull`, `image_pull_timeout`) and reads any seccomp profile file a
`security_opt` names (Nomad sends its JSON in place of the path)."""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drover.model.dockerconfig import DOCKER_KEPT_ONLY, block, block_list, string_map
from drover.model.drivers import DRIVER_DOCKER, config_problems

LABEL_PREFIX = "com.hashicorp.nomad."
LABEL_ALLOC_ID = LABEL_PREFIX + "alloc_id"
DEFAULT_NETWORK_MODE = "bridge"
# Where the task's directories are in the container (the driver builds the task's NOMAD_*_DIR
# variables with these).
ALLOC_DIR_TARGET = "/alloc"
LOCAL_DIR_TARGET = "/local"
SECRETS_DIR_TARGET = "/secrets"
# Every container logs to json-file: the driver reads its output through the engine into the
# task's log files, which only a local log driver allows. Nomad's default options bound what
# the engine keeps meanwhile.
LOG_TYPE = "json-file"
DEFAULT_LOG_CONFIG = {"max-file": "2", "max-size": "2m"}
DEFAULT_CPU_CFS_PERIOD = 100_000
MAX_CPU_CFS_PERIOD = 1_000_000
# cgroups v1's largest and smallest cpu.shares: Nomad scales a task's MHz into them.
MAX_CPU_SHARES = 262_144
MIN_CPU_SHARES = 2
# Nomad's default `allow_caps`: Docker's default capabilities less NET_RAW.
DEFAULT_ALLOW_CAPS = (
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
)  # fmt: skip
_DOCKER_DEFAULT_CAPS = frozenset(c.lower() for c in (*DEFAULT_ALLOW_CAPS, "NET_RAW"))
# Every Linux capability: what "all" stands for.
_LINUX_CAPS = frozenset({
    "chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
    "setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
    "ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
    "sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
    "lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
    "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
})  # fmt: skip

# The config keys Drover acts on: here, or in the driver when it pulls the image.
CARRIED_OUT = frozenset({
    "image", "auth", "force_pull", "image_pull_timeout",  # by the driver, pulling
    "args", "cap_add", "cap_drop", "cgroupns", "command", "cpu_cfs_period", "cpu_hard_limit",
    "devices", "dns_options", "dns_search_domains", "dns_servers", "entrypoint", "extra_hosts",
    "group_add", "healthchecks", "hostname", "init", "interactive", "ipc_mode", "isolation",
    "labels", "logging", "mac_address", "memory_hard_limit", "mount", "mounts", "network_mode",
    "oom_score_adj", "pid_mode", "pids_limit", "ports", "privileged", "readonly_rootfs", "runtime",
    "security_opt", "shm_size", "storage_opt", "sysctl", "tty", "ulimit", "userns_mode",
    "uts_mode", "volume_driver", "volumes", "work_dir",
})  # fmt: skip
# The schema's other keys: stored, warned of at register (drover.model.jobwarnings).
KEPT_ONLY = DOCKER_KEPT_ONLY

# Config keys the engine takes as written, and their keyword arguments (set when not empty).
_AS_WRITTEN = (
    ("image", "image"), ("hostname", "hostname"), ("work_dir", "working_dir"), ("entrypoint", "entrypoint"),
    ("tty", "tty"), ("interactive", "stdin_open"), ("init", "init"), ("privileged", "privileged"),
    ("dns_servers", "dns"), ("dns_search_domains", "dns_search"), ("dns_options", "dns_opt"),
    ("extra_hosts", "extra_hosts"), ("mac_address", "mac_address"), ("volume_driver", "volume_driver"),
    ("security_opt", "security_opt"), ("group_add", "group_add"), ("readonly_rootfs", "read_only"),
    ("ipc_mode", "ipc_mode"), ("pid_mode", "pid_mode"), ("uts_mode", "uts_mode"),
    ("userns_mode", "userns_mode"), ("cgroupns", "cgroupns"), ("runtime", "runtime"),
)  # fmt: skip

_Config = Mapping[str, Any]
_Out = dict[str, Any]  # the keyword arguments being made

_INT = re.compile(r"[+-]?[0-9]+")
_MAC = re.compile(r"[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}")
# The image reference grammar Nomad parses with (distribution's ReferenceRegexp): an optional
# registry host and port, the path, an optional tag and an optional digest.
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"((?:{_HOST}(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)


@dataclass(frozen=True)
class PortMapping:
    """One port the alloc holds: the host's address and port, and the port in the task (0: the
    host's)."""

    label: str
    host_ip: str
    value: int
    to: int


@dataclass(frozen=True)
class BindMount:
    """A host volume's mount (drover.control.client.volumes.HostVolumeMount)."""

    source: str
    target: str
    read_only: bool


@dataclass(frozen=True)
class ContainerContext:
    """What the agent knows of the task: its identity, environment (NOMAD_* with the
    container's paths), ports, host directories, host volumes, limits (MHz, MB; memory_max_mb
    -1: no hard limit) and the docker plugin's options. `cpu_cores` (the node's) is needed by
    cpu_hard_limit; `allow_caps` is the plugin's allow list, Nomad's default unless given."""

    alloc_id: str
    job_id: str
    job_name: str
    parent_job_id: str
    namespace: str
    task_group: str
    task_name: str
    node_id: str
    node_name: str
    env: Mapping[str, str]
    ports: Sequence[PortMapping]
    alloc_dir: str
    task_local_dir: str
    task_secrets_dir: str
    task_dir: str
    host_volumes: Sequence[BindMount]
    cpu_shares: int
    total_compute: int
    memory_mb: int
    memory_max_mb: int
    kill_signal: str
    allow_privileged: bool = False
    volumes_enabled: bool = False
    user: str = ""
    cpu_cores: int = 0
    allow_caps: Sequence[str] = DEFAULT_ALLOW_CAPS


class ContainerSpecError(ValueError):
    """A task's config cannot make a container: every problem, in `problems`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def container_name(task_name: str, alloc_id: str) -> str:
    """`<task>-<alloc id>`, a `/` in the task's name made `_`."""
    return f"{task_name.replace('/', '_')}-{alloc_id}"


def container_labels(ctx: ContainerContext) -> dict[str, str]:
    """Nomad's com.hashicorp.nomad.* labels (parent_job_id only for a child job)."""
    labels = {
        "alloc_id": ctx.alloc_id, "job_id": ctx.job_id, "job_name": ctx.job_name,
        "task_group_name": ctx.task_group, "task_name": ctx.task_name, "namespace": ctx.namespace,
        "node_id": ctx.node_id, "node_name": ctx.node_name,
    }  # fmt: skip
    if ctx.parent_job_id:
        labels["parent_job_id"] = ctx.parent_job_id
    return {LABEL_PREFIX + k: v for k, v in labels.items()}


def parse_image(image: str) -> tuple[str, str]:
    """(repository, tag) as Nomad's parseDockerImage: no tag is "latest"; with a digest the
    repository carries "@<digest>" and the tag is "". Raises ContainerSpecError."""
    m = _REFERENCE.fullmatch(image)
    if m is None:
        raise ContainerSpecError([f'image "{image}" does not match registry specification'])
    repo, tag, digest = m.groups()
    return (f"{repo}@{digest}", "") if digest else (repo, tag or "latest")


def container_spec(config: Mapping[str, Any], ctx: ContainerContext) -> dict[str, Any]:
    """The keyword arguments of `containers.create` for a docker task's (interpolated)
    `config`. Raises ContainerSpecError listing every problem."""
    problems = config_problems(DRIVER_DOCKER, dict(config))
    if problems:  # the rest reads the values as their types
        raise ContainerSpecError(problems)
    out = {kw: _copy(config[key]) for key, kw in _AS_WRITTEN if config.get(key)}
    for part in (_identity, _command, _network, _mounts, _security, _resources, _logging):
        part(config, ctx, out, problems)
    if problems:
        raise ContainerSpecError(problems)
    return out


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def _identity(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    try:
        parse_image(config["image"])
    except ContainerSpecError as e:
        problems.extend(e.problems)
    out["name"] = container_name(ctx.task_name, ctx.alloc_id)
    # The user's labels, under Nomad's: a task cannot pass for another alloc's.
    out["labels"] = {**string_map(config.get("labels")), **container_labels(ctx)}
    out["environment"] = dict(ctx.env)
    if ctx.user:
        out["user"] = ctx.user
    if ctx.kill_signal:
        out["stop_signal"] = ctx.kill_signal
    if block(config.get("healthchecks")).get("disable"):
        out["healthcheck"] = {"Test": ["NONE"]}  # the engine's word for no health check


def _command(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    # Nomad: `entrypoint` is the image's ENTRYPOINT (as written); `command` then `args` its CMD
    # (`args` alone replace the CMD).
    command: str = config.get("command") or ""
    args = list(config.get("args") or [])
    if command:
        if not command.strip():
            problems.append(f'command empty: "{command}"')
        elif command.strip() != command:
            problems.append(f'command contains extra white space: "{command}"')
        out["command"] = [command, *args]
    elif args:
        out["command"] = args


def _network(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    mode: str = config.get("network_mode") or DEFAULT_NETWORK_MODE
    out["network_mode"] = mode
    # The host's and no network take no published ports; another container's has its own.
    publish = mode not in ("host", "none") and not mode.startswith("container:")
    by_label = {p.label: p for p in ctx.ports}
    published: dict[str, list[tuple[str, int]]] = {}
    for label in dict.fromkeys(config.get("ports") or []):
        port = by_label.get(label)
        if port is None:
            problems.append(f'port label "{label}" not found in the alloc\'s networks')
            continue
        if publish:
            to = port.to if port.to > 0 else port.value
            for proto in ("tcp", "udp"):  # Nomad publishes both
                published.setdefault(f"{to}/{proto}", []).append((port.host_ip, port.value))
    if published:
        out["ports"] = {k: v[0] if len(v) == 1 else v for k, v in published.items()}
    for server in config.get("dns_servers") or []:
        try:
            ipaddress.ip_address(server)
        except ValueError:
            problems.append(f'invalid ip address for container dns server: "{server}"')
    mac: str = config.get("mac_address") or ""
    if mac and not _MAC.fullmatch(mac):
        problems.append(f'failed to parse mac_address "{mac}"')


def _expand(base: str, path: str) -> str:
    """`path` made absolute against `base`, cleaned, as Nomad's expandPath."""
    return posixpath.normpath(posixpath.join(base, path))


def _escapes(parent: str, child: str) -> bool:
    parent = posixpath.normpath(parent)
    return child != parent and not child.startswith(parent.rstrip("/") + "/")


def _mounts(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    # Without volumes enabled, a task reaches only paths inside its alloc's directory (which
    # holds the shared alloc dir and every task's dir), as Nomad allows.
    sandbox = posixpath.commonpath([posixpath.normpath(ctx.alloc_dir), posixpath.normpath(ctx.task_dir)])
    mounts = [
        _bind(ctx.alloc_dir, ALLOC_DIR_TARGET),
        _bind(ctx.task_local_dir, LOCAL_DIR_TARGET),
        _bind(ctx.task_secrets_dir, SECRETS_DIR_TARGET),
        # The logs are the agent's: the task reads them, as in Nomad.
        _bind(posixpath.join(ctx.alloc_dir, "logs"), ALLOC_DIR_TARGET + "/logs", read_only=True),
    ]
    for m in [*block_list(config.get("mount")), *block_list(config.get("mounts"))]:
        mount = _mount_block(m, ctx, sandbox, problems)
        if mount is not None:
            mounts.append(mount)
    # The host volumes, with Nomad's default propagation on Linux.
    mounts.extend(_bind(hv.source, hv.target, hv.read_only, "rprivate") for hv in ctx.host_volumes)
    out["mounts"] = mounts

    driver: str = config.get("volume_driver") or ""
    if driver and not ctx.volumes_enabled:
        problems.append(f'volumes are not enabled; cannot use volume driver "{driver}"')
    # `volumes` go as the engine's binds, as Nomad sends them: the engine creates a missing
    # host directory and takes every mode ("ro", "z", propagation...). In the SDK's map form
    # (source: {bind, mode}), which alone keeps such a mode out of the image's volume list.
    binds: dict[str, dict[str, str]] = {}
    for spec in config.get("volumes") or []:
        parts = spec.split(":")
        if len(parts) < 2:
            problems.append(f'invalid docker volume "{spec}": not <src>:<destination> format')
            continue
        # With a volume driver the source names a volume; else it is a path, in the task's dir
        # when relative.
        src = posixpath.normpath(parts[0]) if driver else _expand(ctx.task_dir, parts[0])
        if not driver and not ctx.volumes_enabled and _escapes(sandbox, src):
            problems.append(f'volumes are not enabled; cannot mount host path: "{spec}"')
        if src in binds:
            problems.append(f'invalid docker volume "{spec}": "{src}" is bound already')
        binds[src] = {"bind": parts[1], "mode": parts[2] if len(parts) > 2 and parts[2] else "rw"}
    if binds:
        out["volumes"] = binds


def _bind(source: str, target: str, read_only: bool = False, propagation: str = "") -> dict[str, Any]:
    mount: dict[str, Any] = {"Type": "bind", "Source": source, "Target": target, "ReadOnly": read_only}
    if propagation:
        mount["BindOptions"] = {"Propagation": propagation}
    return mount


def _mount_block(m: dict[str, Any], ctx: ContainerContext, sandbox: str, problems: list[str]) -> _Out | None:
    """A `mount` block as the engine's mount, as Nomad's toDockerMount."""
    kind: str = m.get("type") or "volume"  # Nomad's default
    source: str = m.get("source") or ""
    target: str = m.get("target") or ""
    if kind == "bind":  # a path, in the task's dir when relative
        source = _expand(ctx.task_dir, source)
        if not ctx.volumes_enabled and _escapes(sandbox, source):
            problems.append(f'volumes are not enabled; cannot mount host path: "{source}"')
        propagation = block(m.get("bind_options")).get("propagation") or ""
        return _bind(source, target, bool(m.get("readonly")), propagation)
    mount: dict[str, Any] = {
        "Type": kind,
        "Source": source,
        "Target": target,
        "ReadOnly": bool(m.get("readonly")),
    }
    if kind == "tmpfs":
        if source:
            problems.append('invalid source, must be "" for tmpfs')
        tmpfs = block(m.get("tmpfs_options"))
        options = {k: int(tmpfs[n]) for n, k in (("size", "SizeBytes"), ("mode", "Mode")) if tmpfs.get(n)}
        if options:
            mount["TmpfsOptions"] = options
    elif kind == "volume":
        if not ctx.volumes_enabled:
            problems.append(f'volumes are not enabled; cannot mount volume: "{source}"')
        vo = block(m.get("volume_options"))
        dc = block(vo.get("driver_config"))
        volume: dict[str, Any] = {}
        if vo.get("no_copy"):
            volume["NoCopy"] = True
        if labels := string_map(vo.get("labels")):
            volume["Labels"] = labels
        if dc:
            volume["DriverConfig"] = {"Name": dc.get("name") or "", "Options": string_map(dc.get("options"))}
        if volume:
            mount["VolumeOptions"] = volume
    else:
        problems.append(f'invalid mount type, must be "bind", "volume", "tmpfs": "{kind}"')
        return None
    return mount


def _caps(name: str) -> set[str]:
    """A capability as Nomad normalises it (lower case, no "cap_"); "all" is every one."""
    n = name.strip().lower().removeprefix("cap_")
    if n == "all":
        return set(_LINUX_CAPS)
    return {n} if n else set()


def _security(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    if config.get("privileged") and not ctx.allow_privileged:
        problems.append("Docker privileged mode is disabled on this Nomad agent")
    if isolation := config.get("isolation"):
        problems.append(f'cannot use isolation mode "{isolation}" on linux')  # Windows' only
    _capabilities(config, ctx, out, problems)

    for opt in config.get("security_opt") or []:
        if "=" not in opt and ":" not in opt and opt != "no-new-privileges":
            problems.append(f'invalid security_opt: "{opt}"')
    if sysctls := string_map(config.get("sysctl")):
        out["sysctls"] = sysctls

    devices = []
    for d in block_list(config.get("devices")):
        host: str = d.get("host_path") or ""
        perms: str = d.get("cgroup_permissions") or "rwm"
        if not host:
            problems.append("host path must be set in configuration for devices")
        elif set(perms) - set("rwm"):
            problems.append(f'invalid cgroup permission string: "{perms}"')
        else:
            devices.append(f"{host}:{d.get('container_path') or host}:{perms}")
    if devices:
        out["devices"] = devices

    ulimits = []
    for name, raw in sorted(string_map(config.get("ulimit")).items()):
        soft, _, hard = (raw if ":" in raw else f"{raw}:{raw}").partition(":")  # no hard: the soft
        if not raw:
            problems.append(f'Malformed ulimit specification {name}: "", cannot be empty')
        elif not _INT.fullmatch(soft):
            problems.append(f"Malformed soft ulimit {name}: {raw}")
        elif not _INT.fullmatch(hard):
            problems.append(f"Malformed hard ulimit {name}: {raw}")
        else:
            ulimits.append({"Name": name, "Soft": int(soft), "Hard": int(hard)})
    if ulimits:
        out["ulimits"] = ulimits


def _capabilities(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    # Nomad's capabilities.Delta: a task adds only what the plugin allows, and loses what
    # Docker grants by default but the plugin does not allow.
    allow = {c for name in ctx.allow_caps for c in _caps(name)}
    add = {c for name in config.get("cap_add") or [] for c in _caps(name)}
    if missing := add - allow:
        problems.append(f"driver does not allow the following capabilities: {', '.join(sorted(missing))}")
    drop = (_DOCKER_DEFAULT_CAPS - allow) | {c for name in config.get("cap_drop") or [] for c in _caps(name)}
    for key, caps in (("cap_add", add), ("cap_drop", drop)):
        if caps:
            out[key] = ["ALL"] if caps >= _LINUX_CAPS else sorted(c.upper() for c in caps)


def _resources(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    out["cpu_shares"] = cpu_shares(ctx.cpu_shares, ctx.total_compute)
    if config.get("cpu_hard_limit"):
        period = int(config.get("cpu_cfs_period") or 0)
        if period < 0 or period > MAX_CPU_CFS_PERIOD:
            problems.append("invalid value for cpu_cfs_period")
        elif ctx.total_compute <= 0 or ctx.cpu_cores <= 0:
            problems.append("cpu_hard_limit: the node's total compute and core count are not known")
        else:
            period = period or DEFAULT_CPU_CFS_PERIOD
            out["cpu_period"] = period
            # The task's share of the node's compute, in time per period on every core.
            out["cpu_quota"] = int(ctx.cpu_shares / ctx.total_compute * period) * ctx.cpu_cores

    hard_limit = int(config.get("memory_hard_limit") or 0)
    limit, reservation = memory_limits(hard_limit, ctx.memory_mb, ctx.memory_max_mb)
    if limit > 0 and reservation > limit:
        problems.append(f"task memory requirements exceed driver hard limit of {hard_limit} MB")
    if limit > 0:
        out["mem_limit"] = limit
        out["memswap_limit"] = limit  # no swap, as Nomad
    if reservation > 0:
        out["mem_reservation"] = reservation

    if (pids := int(config.get("pids_limit") or 0)) > 0:
        out["pids_limit"] = pids
    if shm := int(config.get("shm_size") or 0):
        out["shm_size"] = shm
    if oom := int(config.get("oom_score_adj") or 0):
        out["oom_score_adj"] = oom
    if storage := string_map(config.get("storage_opt")):
        out["storage_opt"] = storage


def cpu_shares(requested: int, total_compute: int) -> int:
    """The task's MHz as cpu.shares (Nomad's cpuResources): at least 2, scaled into cgroups
    v1's range on a node whose total compute exceeds it."""
    if requested < MIN_CPU_SHARES:
        return MIN_CPU_SHARES
    if total_compute < MAX_CPU_SHARES:
        return requested
    return max(MIN_CPU_SHARES, int(requested / total_compute * MAX_CPU_SHARES))


def memory_limits(hard_limit_mb: int, memory_mb: int, memory_max_mb: int) -> tuple[int, int]:
    """(limit, reservation) in bytes, as Nomad's memoryLimits: memory_max -1 is no limit;
    else the greater of memory_hard_limit and memory_max is the limit and memory the
    reservation, and without either memory is the limit."""
    mib = 1024 * 1024
    if memory_max_mb == -1:
        return 0, memory_mb * mib
    high = max(hard_limit_mb, memory_max_mb)
    if high == 0:
        return memory_mb * mib, 0
    return high * mib, memory_mb * mib


def _logging(config: _Config, ctx: ContainerContext, out: _Out, problems: list[str]) -> None:
    # Another log driver is not refused: the task runs the same and its output is still kept,
    # in its log files; the register warns that the type is not carried out. Its options are
    # that driver's, which json-file would refuse.
    logging = block(config.get("logging"))
    kind = logging.get("type") or logging.get("driver") or LOG_TYPE
    options = string_map(logging.get("config")) if kind == LOG_TYPE else {}
    out["log_config"] = {"Type": LOG_TYPE, "Config": options or dict(DEFAULT_LOG_CONFIG)}


__all__ = [
    "CARRIED_OUT", "KEPT_ONLY", "BindMount", "ContainerContext", "ContainerSpecError", "PortMapping",
    "container_labels", "container_name", "container_spec", "cpu_shares", "memory_limits", "parse_image",
]  # fmt: skip
