"""The `service` and `check` blocks of groups and tasks (Nomad's api Service, ServiceCheck)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from drover.model.base import NomadModel

SERVICE_PROVIDER_NOMAD = "nomad"
SERVICE_PROVIDER_CONSUL = "consul"
SERVICE_PROVIDERS = (SERVICE_PROVIDER_NOMAD, SERVICE_PROVIDER_CONSUL)
ON_UPDATE_REQUIRE_HEALTHY = "require_healthy"
ON_UPDATE_IGNORE_WARNINGS = "ignore_warnings"
ON_UPDATE_IGNORE = "ignore"
ON_UPDATE_MODES = (ON_UPDATE_REQUIRE_HEALTHY, ON_UPDATE_IGNORE_WARNINGS, ON_UPDATE_IGNORE)
ADDRESS_MODE_AUTO = "auto"
ADDRESS_MODE_DRIVER = "driver"
ADDRESS_MODE_ALLOC = "alloc"
ADDRESS_MODE_ALLOC_IPV6 = "alloc_ipv6"
ADDRESS_MODES = (ADDRESS_MODE_AUTO, "host", ADDRESS_MODE_DRIVER, ADDRESS_MODE_ALLOC, ADDRESS_MODE_ALLOC_IPV6)
CHECK_HTTP = "http"
CHECK_TCP = "tcp"
CHECK_SCRIPT = "script"
CHECK_GRPC = "grpc"
CHECK_TYPES = (CHECK_HTTP, CHECK_TCP, CHECK_SCRIPT, CHECK_GRPC)
# The check types each provider runs. Nomad runs http and tcp checks itself and script checks
# only through Consul; Drover, without Consul, runs a nomad service's script checks too.
NOMAD_CHECK_TYPES = (CHECK_TCP, CHECK_HTTP, CHECK_SCRIPT)
CONSUL_CHECK_TYPES = (CHECK_GRPC, CHECK_TCP, CHECK_HTTP, CHECK_SCRIPT)
CHECK_INITIAL_STATUSES = ("passing", "warning", "critical")
# A Consul service's kind: a typical service ("") or a gateway.
CONSUL_SERVICE_KINDS = ("", "api-gateway", "ingress-gateway", "mesh-gateway", "terminating-gateway")
# api CheckRestart.Canonicalize: a check_restart block without grace waits 1 s.
DEFAULT_CHECK_RESTART_GRACE = 1_000_000_000


class CheckRestart(NomadModel):
    limit: int = 0
    grace: int = 0
    ignore_warnings: bool = False


class ServiceCheck(NomadModel):
    name: str = ""
    type: str = ""
    command: str = ""
    args: list[str] = Field(default_factory=list)
    path: str = ""
    protocol: str = ""
    port_label: str = ""
    expose: bool = False
    address_mode: str = ""
    advertise: str = ""
    interval: int = 0
    timeout: int = 0
    initial_status: str = ""
    notes: str = ""
    tls_server_name: str = ""
    tls_skip_verify: bool = False
    header: dict[str, list[str]] = Field(default_factory=dict)
    method: str = ""
    check_restart: CheckRestart | None = None
    grpc_service: str = ""
    grpc_use_tls: bool = False
    task_name: str = ""
    success_before_passing: int = 0
    failures_before_critical: int = 0
    failures_before_warning: int = 0
    body: str = ""
    on_update: str = ""


class ServiceWeights(NomadModel):
    passing: int = 0
    warning: int = 0


class Service(NomadModel):
    name: str = ""
    tags: list[str] = Field(default_factory=list)
    canary_tags: list[str] = Field(default_factory=list)
    enable_tag_override: bool = False
    port_label: str = ""
    address_mode: str = ""
    address: str = ""
    checks: list[ServiceCheck] = Field(default_factory=list)
    check_restart: CheckRestart | None = None
    # Consul Connect (sidecars, gateways): kept as written, never carried out (a warning says so).
    connect: dict[str, Any] | None = None
    meta: dict[str, str] = Field(default_factory=dict)
    canary_meta: dict[str, str] = Field(default_factory=dict)
    tagged_addresses: dict[str, str] = Field(default_factory=dict)
    task_name: str = ""
    on_update: str = ""
    identity: dict[str, Any] | None = None
    weights: ServiceWeights | None = None
    provider: str = ""
    cluster: str = ""
    kind: str = ""
