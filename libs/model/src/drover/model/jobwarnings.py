"""A job's warnings for the register, plan and validate answers (beside drover.model.unkept's
"was dropped" ones): what Drover keeps but does not carry out (blocks, and the docker driver's
config keys and log drivers), since a job that reads back whole must never be taken to run
whole when part of it is only stored; and Nomad's own warnings (structs TaskGroup.Warnings:
deprecated fields, an update wider than its group)."""

from __future__ import annotations

from drover.model.dockerconfig import DOCKER_KEPT_ONLY, block
from drover.model.drivers import DRIVER_DOCKER
from drover.model.job import Job, Task, TaskGroup
from drover.model.services import SERVICE_PROVIDER_NOMAD, Service
from drover.model.volumes import VOLUME_TYPE_CSI

_KEPT = "is kept but not carried out"
# The docker log driver Drover runs every container with: it reads the output through the
# engine into the task's own log files.
_DOCKER_LOG_TYPE = "json-file"


def job_warnings(job: Job) -> list[str]:
    """One warning per block of `job` that Drover stores and returns but does not act on, and
    per use Nomad warns of."""
    out: list[str] = []
    if job.multiregion is not None:
        out.append(f"Multiregion {_KEPT}: Drover runs one region")
    for tg in job.task_groups:
        out.extend(f'group "{tg.name}": {w}' for w in [*_group(tg), *_deprecated(tg)])
        for task in tg.tasks:
            out.extend(f'group "{tg.name}": task "{task.name}": {w}' for w in _task(task))
    return out


def _group(tg: TaskGroup) -> list[str]:
    out: list[str] = []
    if _consul(tg.services):
        out.append(
            f"Services of provider consul {_KEPT}: Drover has no Consul (provider nomad registers them)"
        )
    if tg.consul is not None:
        out.append(f"Consul {_KEPT}: Drover does not use Consul")
    for name, vol in sorted(tg.volumes.items()):
        if vol.type == VOLUME_TYPE_CSI:
            out.append(f'volume "{name}" of type csi {_KEPT}: Drover has no CSI plugins')
    for net in tg.networks:
        if net.dns is not None:
            out.append(f"network DNS {_KEPT}: tasks use their node's resolver")
        if net.cni is not None:
            out.append(f"network CNI args {_KEPT}")
    if tg.max_run_duration:
        out.append(f"MaxRunDuration {_KEPT}")
    return out


def _consul(services: list[Service]) -> bool:
    return any(s.provider != SERVICE_PROVIDER_NOMAD for s in services)


def _deprecated(tg: TaskGroup) -> list[str]:
    out: list[str] = []
    if tg.update is not None and tg.count > 1 and tg.update.max_parallel > tg.count:
        out.append(
            f"Update max parallel count is greater than task group count ({tg.update.max_parallel} > "
            f"{tg.count}). A destructive change would result in the simultaneous replacement of all "
            "allocations."
        )
    # Without a disconnect block, Drover carries the old fields out as one (Nomad 1.10 ignores
    # them); beside one, they are ignored as in Nomad.
    fate = "ignored in favor of" if tg.disconnect is not None else "carried out as"
    if tg.max_client_disconnect is not None:
        out.append(f"MaxClientDisconnect is deprecated and {fate} Disconnect.LostAfter")
    if tg.stop_after_client_disconnect is not None:
        out.append(f"StopAfterClientDisconnect is deprecated and {fate} Disconnect.StopOnClientAfter")
    if tg.prevent_reschedule_on_lost:
        out.append(f"PreventRescheduleOnLost is deprecated and {fate} Disconnect.Replace")
    if tg.networks and tg.networks[0].mbits > 0:
        out.append("mbits has been deprecated as of Nomad 0.12.0 and is ignored")
    return out


def _task(task: Task) -> list[str]:
    blocks = {
        "Services of provider consul": _consul(task.services),
        "Vault": task.vault is not None,
        "Consul": task.consul is not None,
        "Identity": task.identity is not None or bool(task.identities),
        "Secrets": bool(task.secrets),
        "CSIPluginConfig": task.csi_plugin_config is not None,
        "Actions": bool(task.actions),
        "Schedule": task.schedule is not None,
        "Kind": bool(task.kind),
        "Resources.Devices": bool(task.resources.devices),
        "Resources.NUMA": task.resources.numa is not None,
        "Resources.Networks": bool(task.resources.networks),
        "Resources.SecretsMB": bool(task.resources.secrets_mb),
    }
    out = [f"{name} {_KEPT}" for name, present in blocks.items() if present]
    out.extend(_templates(task))
    if task.driver == DRIVER_DOCKER:
        out.extend(_docker(task))
    return out


def _docker(task: Task) -> list[str]:
    # A key set to its zero value (false, "", []) asks for nothing.
    out = [
        f'config "{key}" of driver docker {_KEPT}'
        for key in sorted(DOCKER_KEPT_ONLY)
        if task.config.get(key) not in (None, False, "", 0, [], {})
    ]
    logging = block(task.config.get("logging"))
    log_type = logging.get("type") or logging.get("driver") or _DOCKER_LOG_TYPE
    if log_type != _DOCKER_LOG_TYPE:
        out.append(
            f'config "logging" of type "{log_type}" of driver docker {_KEPT}: the output goes to '
            "the task's log files"
        )
    return out


def _templates(task: Task) -> list[str]:
    """A template's fields the agent does not act on (it renders, writes and watches)."""
    out: list[str] = []
    for i, t in enumerate(task.templates):
        fields = {
            "VaultGrace": bool(t.vault_grace),
            "ChangeScript.RunOnFirstRender": t.change_script is not None
            and t.change_script.run_on_first_render,
        }
        out.extend(f"template {i}: {name} {_KEPT}" for name, present in fields.items() if present)
    return out


__all__ = ["job_warnings"]
