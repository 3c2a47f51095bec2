"""Canonical forms of a group's and a task's inner blocks (networks, services and checks,
templates, artifacts, volume mounts, vault, scaling, CSI plugins, the deprecated disconnect
fields), as Nomad's api and structs Canonicalize fill them. drover.model.canonicalize calls
these; like it, each returns a new block and leaves its input alone."""

from __future__ import annotations

import posixpath

from drover.model.base import overlay
from drover.model.integrations import TaskCSIPluginConfig, Vault
from drover.model.job import Disconnect, ScalingPolicy
from drover.model.network import DEFAULT_HOST_NETWORK, NetworkResource
from drover.model.services import (
    DEFAULT_CHECK_RESTART_GRACE,
    ON_UPDATE_REQUIRE_HEALTHY,
    SERVICE_PROVIDER_CONSUL,
    CheckRestart,
    Service,
    ServiceWeights,
)
from drover.model.taskfiles import ChangeScript, TaskArtifact, Template
from drover.model.volumes import PROPAGATION_PRIVATE, VolumeMount

SCALING_HORIZONTAL = "horizontal"
_SECOND = 1_000_000_000


def network(net: NetworkResource) -> NetworkResource:
    """structs NetworkResource.Canonicalize: a port without a host network is on "default"."""
    out = net.model_copy(deep=True)
    for port in out.ports():
        port.host_network = port.host_network or DEFAULT_HOST_NETWORK
    return out


def service(svc: Service, job_name: str, group: str, task: str | None) -> Service:
    """api Service.Canonicalize: the name from job, group (and task); Nomad's defaults; each
    check's check_restart merged from the service's and its on_update from the service's."""
    out = svc.model_copy(deep=True)
    if not out.name:
        out.name = f"{job_name}-{group}" + (f"-{task}" if task else "")
    out.address_mode = out.address_mode or "auto"
    out.on_update = out.on_update or ON_UPDATE_REQUIRE_HEALTHY
    out.provider = out.provider or SERVICE_PROVIDER_CONSUL
    out.cluster = out.cluster or "default"
    if out.weights is not None:
        out.weights = ServiceWeights(passing=max(out.weights.passing, 1), warning=max(out.weights.warning, 1))
    for check in out.checks:
        merged = _merge_check_restart(out.check_restart, check.check_restart)
        if merged is not None and "grace" not in merged.model_fields_set:
            merged.grace = DEFAULT_CHECK_RESTART_GRACE
        check.check_restart = merged
        check.success_before_passing = max(check.success_before_passing, 0)
        check.failures_before_critical = max(check.failures_before_critical, 0)
        check.failures_before_warning = max(check.failures_before_warning, 0)
        check.on_update = check.on_update or out.on_update
    return out


def _merge_check_restart(base: CheckRestart | None, over: CheckRestart | None) -> CheckRestart | None:
    """api CheckRestart.Merge: the check's limit (when > 0), grace and ignore_warnings (when
    true) over the service's."""
    if base is None:
        return over.model_copy() if over is not None else None
    out = base.model_copy()
    if over is not None:
        if over.limit > 0:
            out.limit = over.limit
        if "grace" in over.model_fields_set:
            out.grace = over.grace
        out.ignore_warnings = out.ignore_warnings or over.ignore_warnings
    return out


def template(tmpl: Template) -> Template:
    """api Template.Canonicalize."""
    defaults = Template(
        change_mode="restart", splay=5 * _SECOND, perms="0644", left_delim="{{", right_delim="}}"
    )
    out = overlay(defaults, tmpl)
    if "change_signal" not in tmpl.model_fields_set:
        out.change_signal = "SIGHUP" if out.change_mode == "signal" else ""
    else:
        out.change_signal = out.change_signal.upper()
    if tmpl.change_script is not None:
        out.change_script = overlay(ChangeScript(timeout=5 * _SECOND), tmpl.change_script)
    return out


def artifact(art: TaskArtifact) -> TaskArtifact:
    """api TaskArtifact.Canonicalize: mode "any"; without a destination, `local/` (a file
    mode artifact: `local/` and the source's base name)."""
    out = art.model_copy(deep=True)
    out.getter_mode = out.getter_mode or "any"
    if not out.relative_dest:
        base = posixpath.basename(out.getter_source.split("?", 1)[0])
        out.relative_dest = posixpath.join("local", base) if out.getter_mode == "file" else "local/"
    return out


def volume_mount(vm: VolumeMount) -> VolumeMount:
    out = vm.model_copy()
    out.propagation_mode = out.propagation_mode or PROPAGATION_PRIVATE
    return out


def vault(v: Vault) -> Vault:
    return overlay(Vault(cluster="default", change_mode="restart", change_signal="SIGHUP"), v)


def csi_plugin(c: TaskCSIPluginConfig) -> TaskCSIPluginConfig:
    out = c.model_copy()
    out.mount_dir = out.mount_dir or "/csi"
    out.stage_publish_base_dir = out.stage_publish_base_dir or "/local/csi"
    out.health_timeout = out.health_timeout or 30 * _SECOND
    return out


def scaling(policy: ScalingPolicy, count: int) -> ScalingPolicy:
    """api ScalingPolicy.Canonicalize: min defaults to the group's count; type horizontal."""
    out = policy.model_copy(deep=True)
    if out.min is None:
        out.min = count
    out.type = out.type or SCALING_HORIZONTAL
    return out


def folded_disconnect(
    max_client_disconnect: int | None,
    stop_after_client_disconnect: int | None,
    prevent_reschedule: bool | None,
) -> Disconnect | None:
    """The deprecated group fields as the `disconnect` block they became (Nomad 1.8), for a
    group without one; None when none is set."""
    if max_client_disconnect is None and stop_after_client_disconnect is None and not prevent_reschedule:
        return None
    out = Disconnect()
    if max_client_disconnect is not None:
        out.lost_after = max_client_disconnect
    if stop_after_client_disconnect is not None:
        out.stop_on_client_after = stop_after_client_disconnect
    if prevent_reschedule:
        out.replace = False
    return out
