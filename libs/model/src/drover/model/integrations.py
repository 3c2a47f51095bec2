"""Blocks for systems Drover does not run with (Vault, Consul, workload identities, secrets
providers, CSI plugins, multiregion deployments): kept as Nomad keeps them, so a job reads back
as it was written, and named in a register's Warnings as not carried out."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from drover.model.base import NomadModel


class Vault(NomadModel):
    policies: list[str] = Field(default_factory=list)
    role: str = ""
    namespace: str = ""
    cluster: str = ""
    env: bool = True
    disable_file: bool = False
    change_mode: str = ""
    change_signal: str = ""
    allow_token_expiration: bool = False


class Consul(NomadModel):
    namespace: str = ""
    cluster: str = ""
    partition: str = ""


class WorkloadIdentity(NomadModel):
    name: str = ""
    audience: list[str] = Field(default_factory=list)
    change_mode: str = ""
    change_signal: str = ""
    env: bool = False
    file: bool = False
    filepath: str = ""
    service_name: str = ""
    ttl: int = 0
    extra_claims: list[str] = Field(default_factory=list)


class Secret(NomadModel):
    name: str = ""
    provider: str = ""
    path: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class TaskCSIPluginConfig(NomadModel):
    id: str = ""
    type: str = ""
    mount_dir: str = ""
    stage_publish_base_dir: str = ""
    health_timeout: int = 0


class MultiregionStrategy(NomadModel):
    max_parallel: int = 0
    on_failure: str = ""


class MultiregionRegion(NomadModel):
    name: str = ""
    count: int = 0
    datacenters: list[str] = Field(default_factory=list)
    node_pool: str = ""
    meta: dict[str, str] = Field(default_factory=dict)


class Multiregion(NomadModel):
    strategy: MultiregionStrategy | None = None
    regions: list[MultiregionRegion] = Field(default_factory=list)
