"""What each jobspec block may hold, and where it goes in Nomad's API JSON (the `hcl` tags of
Nomad's api structs). An argument has a kind that its value is converted to; a block nests a
spec, once, as a list, or as a map keyed by its label."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drover.model.base import pascal


@dataclass(frozen=True)
class Arg:
    """An argument, its value converted to `kind` (drover.jobspec.kinds)."""

    kind: str
    json: str = ""


@dataclass(frozen=True)
class Nested:
    spec: Spec
    mode: str = "one"  # one | list | map (keyed by the label)
    json: str = ""


@dataclass(frozen=True)
class Spec:
    fields: dict[str, Arg | Nested]
    # The JSON field a block's label goes into; "" when the block takes no label.
    label: str = ""
    post: Callable[[dict[str, Any]], None] | None = None
    # Constraint and affinity blocks are read by drover.jobspec.placement, not field by field.
    special: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def json_name(hcl: str, f: Arg | Nested) -> str:
    return f.json or pascal(hcl)


def _args(kind: str, *names: str) -> dict[str, Arg | Nested]:
    return {n: Arg(kind) for n in names}


def _default_scaling_type(d: dict[str, Any]) -> None:
    d.setdefault("Type", "horizontal")


def _periodic_spec_type(d: dict[str, Any]) -> None:
    if "Spec" in d or "Specs" in d:
        d["SpecType"] = "cron"


def _split_ports(d: dict[str, Any]) -> None:
    """A `port` block with `static` is a reserved port (Nomad's normalizeNetworkPorts)."""
    ports = d.pop("DynamicPorts", None)
    if ports is None:
        return
    reserved = [p for p in ports if p.get("Value", 0) > 0]
    dynamic = [p for p in ports if p.get("Value", 0) <= 0]
    if dynamic:
        d["DynamicPorts"] = dynamic
    if reserved:
        d["ReservedPorts"] = d.get("ReservedPorts", []) + reserved


CONSTRAINT = Spec({}, special="constraint")
AFFINITY = Spec({}, special="affinity")
PORT = Spec({"static": Arg("int", "Value"), **_args("int", "to"), **_args("string", "host_network"),
             **_args("bool", "ignore_collision")}, label="Label")  # fmt: skip
NETWORK = Spec(
    {
        **_args("string", "mode", "device", "hostname"),
        "cidr": Arg("string", "CIDR"),
        "ip": Arg("string", "IP"),
        "mbits": Arg("int", "MBits"),
        "dns": Nested(Spec(_args("strings", "servers", "searches", "options")), json="DNS"),
        "port": Nested(PORT, "list", "DynamicPorts"),
        "reserved_ports": Nested(PORT, "list", "ReservedPorts"),
        "cni": Nested(Spec({"args": Arg("strmap")}), json="CNI"),
    },
    post=_split_ports,
)
DEVICE = Spec({"count": Arg("int"), "constraint": Nested(CONSTRAINT, "list", "Constraints"),
               "affinity": Nested(AFFINITY, "list", "Affinities")}, label="Name")  # fmt: skip
RESOURCES = Spec(
    {
        "cpu": Arg("int", "CPU"),
        "cores": Arg("int"),
        "memory": Arg("int", "MemoryMB"),
        "memory_max": Arg("int", "MemoryMaxMB"),
        "disk": Arg("int", "DiskMB"),
        "secrets": Arg("int", "SecretsMB"),
        "iops": Arg("int", "IOPS"),
        "network": Nested(NETWORK, "list", "Networks"),
        "device": Nested(DEVICE, "list", "Devices"),
        "numa": Nested(Spec({**_args("string", "affinity"), **_args("strings", "devices")}), json="NUMA"),
    }
)
CHECK_RESTART = Spec(
    {**_args("int", "limit"), **_args("duration", "grace"), **_args("bool", "ignore_warnings")}
)
CHECK = Spec(
    {
        **_args(
            "string",
            "name",
            "type",
            "command",
            "path",
            "protocol",
            "address_mode",
            "advertise",
            "initial_status",
            "notes",
            "method",
            "body",
            "on_update",
        ),
        **_args("strings", "args"),
        **_args("bool", "expose"),
        **_args("duration", "interval", "timeout"),
        **_args("int", "success_before_passing", "failures_before_critical", "failures_before_warning"),
        "port": Arg("string", "PortLabel"),
        "task": Arg("string", "TaskName"),
        "tls_server_name": Arg("string", "TLSServerName"),
        "tls_skip_verify": Arg("bool", "TLSSkipVerify"),
        "grpc_service": Arg("string", "GRPCService"),
        "grpc_use_tls": Arg("bool", "GRPCUseTLS"),
        "header": Arg("strlists"),
        "check_restart": Nested(CHECK_RESTART),
    }
)
SERVICE = Spec(
    {
        **_args("string", "name", "address_mode", "address", "on_update", "provider", "cluster", "kind"),
        **_args("strings", "tags", "canary_tags"),
        **_args("bool", "enable_tag_override"),
        **_args("strmap", "meta", "canary_meta", "tagged_addresses"),
        "port": Arg("string", "PortLabel"),
        "task": Arg("string", "TaskName"),
        "check": Nested(CHECK, "list", "Checks"),
        "check_restart": Nested(CHECK_RESTART),
        "weights": Nested(Spec(_args("int", "passing", "warning"))),
    }
)
RESTART = Spec({**_args("duration", "interval", "delay"), **_args("int", "attempts"),
                **_args("string", "mode"), **_args("bool", "render_templates")})  # fmt: skip
RESCHEDULE = Spec({**_args("int", "attempts"), **_args("duration", "interval", "delay", "max_delay"),
                   **_args("string", "delay_function"), **_args("bool", "unlimited")})  # fmt: skip
UPDATE = Spec(
    {
        **_args("duration", "stagger", "min_healthy_time", "healthy_deadline", "progress_deadline"),
        **_args("int", "max_parallel", "canary"),
        **_args("string", "health_check"),
        **_args("bool", "auto_revert", "auto_promote"),
    }
)
MIGRATE = Spec({**_args("int", "max_parallel"), **_args("string", "health_check"),
                **_args("duration", "min_healthy_time", "healthy_deadline")})  # fmt: skip
DISCONNECT = Spec({**_args("duration", "lost_after", "stop_on_client_after"),
                   **_args("bool", "replace"), **_args("string", "reconcile")})  # fmt: skip
EPHEMERAL_DISK = Spec({**_args("bool", "sticky", "migrate"), "size": Arg("int", "SizeMB")})
SPREAD = Spec(
    {
        **_args("string", "attribute"),
        **_args("int", "weight"),
        "target": Nested(Spec({**_args("int", "percent")}, label="Value"), "list", "SpreadTarget"),
    }
)
VAULT = Spec({**_args("strings", "policies"), **_args("string", "role", "namespace", "cluster", "change_mode",
              "change_signal"), **_args("bool", "env", "disable_file", "allow_token_expiration")})  # fmt: skip
TEMPLATE = Spec(
    {
        "source": Arg("string", "SourcePath"),
        "destination": Arg("string", "DestPath"),
        "data": Arg("string", "EmbeddedTmpl"),
        "left_delimiter": Arg("string", "LeftDelim"),
        "right_delimiter": Arg("string", "RightDelim"),
        "env": Arg("bool", "Envvars"),
        "error_on_missing_key": Arg("bool", "ErrMissingKey"),
        **_args("string", "change_mode", "change_signal", "perms"),
        **_args("bool", "once"),
        **_args("int", "uid", "gid"),
        **_args("duration", "splay", "vault_grace"),
        "wait": Nested(Spec(_args("duration", "min", "max"))),
        "change_script": Nested(
            Spec(
                {
                    **_args("string", "command"),
                    **_args("strings", "args"),
                    **_args("duration", "timeout"),
                    **_args("bool", "fail_on_error", "run_on_first_render"),
                }
            )
        ),
    }
)
ARTIFACT = Spec(
    {
        "source": Arg("string", "GetterSource"),
        "options": Arg("strmap", "GetterOptions"),
        "headers": Arg("strmap", "GetterHeaders"),
        "mode": Arg("string", "GetterMode"),
        "insecure": Arg("bool", "GetterInsecure"),
        "destination": Arg("string", "RelativeDest"),
        "chown": Arg("bool"),
    }
)
LOGS = Spec({"max_files": Arg("int"), "max_file_size": Arg("int", "MaxFileSizeMB"),
             **_args("bool", "enabled", "disabled")})  # fmt: skip
IDENTITY = Spec(
    {
        **_args("string", "name", "change_mode", "change_signal", "filepath", "service_name"),
        "aud": Arg("strings", "Audience"),
        **_args("bool", "env", "file"),
        "ttl": Arg("duration", "TTL"),
        **_args("strings", "extra_claims"),
    }
)
VOLUME_MOUNT = Spec({**_args("string", "volume", "destination", "propagation_mode", "selinux_label"),
                     "read_only": Arg("bool")})  # fmt: skip
VOLUME = Spec(
    {
        **_args("string", "type", "source", "access_mode", "attachment_mode"),
        **_args("bool", "read_only", "sticky", "per_alloc"),
        "mount_options": Nested(Spec({"fs_type": Arg("string", "FSType"), "mount_flags": Arg("strings")})),
    },
    label="Name",
)
TASK = Spec(
    {
        **_args("string", "driver", "user", "kill_signal", "kind"),
        **_args("bool", "leader"),
        **_args("duration", "kill_timeout", "shutdown_delay"),
        **_args("strmap", "env", "meta"),
        "config": Arg("any"),
        "lifecycle": Nested(Spec({**_args("string", "hook"), **_args("bool", "sidecar")})),
        "constraint": Nested(CONSTRAINT, "list", "Constraints"),
        "affinity": Nested(AFFINITY, "list", "Affinities"),
        "service": Nested(SERVICE, "list", "Services"),
        "resources": Nested(RESOURCES),
        "restart": Nested(RESTART, json="RestartPolicy"),
        "logs": Nested(LOGS, json="LogConfig"),
        "artifact": Nested(ARTIFACT, "list", "Artifacts"),
        "template": Nested(TEMPLATE, "list", "Templates"),
        "vault": Nested(VAULT),
        "dispatch_payload": Nested(Spec(_args("string", "file"))),
        "volume_mount": Nested(VOLUME_MOUNT, "list", "VolumeMounts"),
        "identity": Nested(IDENTITY, "list", "Identities"),
        "action": Nested(
            Spec({**_args("string", "command"), **_args("strings", "args")}, label="Name"), "list", "Actions"
        ),
    },
    label="Name",
)
SCALING = Spec({**_args("int", "min", "max"), **_args("bool", "enabled"), **_args("string", "type"),
                "policy": Arg("any")}, post=_default_scaling_type)  # fmt: skip
GROUP = Spec(
    {
        **_args("int", "count"),
        **_args("strmap", "meta"),
        **_args(
            "duration",
            "shutdown_delay",
            "max_run_duration",
            "stop_after_client_disconnect",
            "max_client_disconnect",
        ),
        **_args("bool", "prevent_reschedule_on_lost"),
        "constraint": Nested(CONSTRAINT, "list", "Constraints"),
        "affinity": Nested(AFFINITY, "list", "Affinities"),
        "spread": Nested(SPREAD, "list", "Spreads"),
        "task": Nested(TASK, "list", "Tasks"),
        "volume": Nested(VOLUME, "map", "Volumes"),
        "restart": Nested(RESTART, json="RestartPolicy"),
        "reschedule": Nested(RESCHEDULE, json="ReschedulePolicy"),
        "disconnect": Nested(DISCONNECT),
        "ephemeral_disk": Nested(EPHEMERAL_DISK),
        "update": Nested(UPDATE),
        "migrate": Nested(MIGRATE),
        "network": Nested(NETWORK, "list", "Networks"),
        "service": Nested(SERVICE, "list", "Services"),
        "scaling": Nested(SCALING),
        "vault": Nested(VAULT, json="_Vault"),
    },
    label="Name",
)
JOB = Spec(
    {
        **_args("string", "region", "namespace", "id", "name", "type", "node_pool"),
        "id": Arg("string", "ID"),
        **_args("int", "priority"),
        **_args("bool", "all_at_once"),
        **_args("strings", "datacenters"),
        **_args("strmap", "meta"),
        "constraint": Nested(CONSTRAINT, "list", "Constraints"),
        "affinity": Nested(AFFINITY, "list", "Affinities"),
        "spread": Nested(SPREAD, "list", "Spreads"),
        "group": Nested(GROUP, "list", "TaskGroups"),
        "task": Nested(TASK, "list", "_Tasks"),
        "update": Nested(UPDATE),
        "periodic": Nested(
            Spec(
                {
                    **_args("bool", "enabled", "prohibit_overlap"),
                    "cron": Arg("string", "Spec"),
                    "crons": Arg("strings", "Specs"),
                    **_args("string", "time_zone"),
                },
                post=_periodic_spec_type,
            )
        ),
        "parameterized": Nested(
            Spec({**_args("string", "payload"), **_args("strings", "meta_required", "meta_optional")}),
            json="ParameterizedJob",
        ),
        "reschedule": Nested(RESCHEDULE),
        "migrate": Nested(MIGRATE),
        "vault": Nested(VAULT, json="_Vault"),
        "ui": Nested(
            Spec(
                {
                    **_args("string", "description"),
                    "link": Nested(
                        Spec({"label": Arg("string"), "url": Arg("string", "URL")}), "list", "Links"
                    ),
                }
            ),
            json="UI",
        ),
    },
    label="ID",
)
