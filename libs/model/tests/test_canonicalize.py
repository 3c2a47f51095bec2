"""Canonicalization: Nomad's defaults, merge precedence, explicit values, idempotence."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from drover.model import Job, NomadModel, ReschedulePolicy
from drover.model.canonicalize import canonicalize, overlay
from drover.model.defaults import (
    default_disconnect,
    default_ephemeral_disk,
    default_migrate_strategy,
    default_reschedule_policy,
    default_restart_policy,
    default_update_strategy,
)
from drover.model.durations import HOUR, MINUTE, SECOND
from drover.model.validation import validate_job

TYPES = ("service", "batch", "system", "sysbatch")


def job_doc(job_type: str = "service", **group: Any) -> dict[str, Any]:
    """A minimal job in Nomad's JSON form with one group 'web' and one task."""
    tg: dict[str, Any] = {
        "Name": "web",
        "Tasks": [{"Name": "server", "Driver": "docker", "Config": {"image": "redis:7"}}],
    }
    tg.update(group)
    return {"ID": "example", "Type": job_type, "TaskGroups": [tg]}


def canon(doc: dict[str, Any]) -> Job:
    return canonicalize(Job.model_validate(doc))


def dump(model: NomadModel | None) -> dict[str, Any] | None:
    return None if model is None else model.model_dump()


def all_fields_set(model: NomadModel) -> bool:
    """Every field of ``model`` and of nested models is marked as set (None means "absent")."""
    present = {name for name in type(model).model_fields if getattr(model, name) is not None}
    if not present <= set(model.model_fields_set):
        return False
    for name in type(model).model_fields:
        value = getattr(model, name)
        values = value if isinstance(value, list) else [value]
        if not all(all_fields_set(v) for v in values if isinstance(v, NomadModel)):
            return False
    return True


# A job as `nomad job run -output` prints it: null for every block the job file left out.
NOMAD_OUTPUT_JSON = """
{
  "Job": {
    "Region": null, "Namespace": null, "ID": "example", "Name": "example", "Type": null,
    "Priority": null, "AllAtOnce": null, "Datacenters": null, "NodePool": null,
    "Constraints": null, "Affinities": null, "Spreads": null,
    "TaskGroups": [
      {
        "Name": "cache", "Count": null, "Constraints": null, "Affinities": null, "Spreads": null,
        "Volumes": null, "RestartPolicy": null, "ReschedulePolicy": null, "EphemeralDisk": null,
        "Update": null, "Migrate": null, "Networks": null, "Meta": null, "Services": null,
        "ShutdownDelay": null, "Scaling": null, "Consul": null, "Disconnect": null,
        "Tasks": [
          {
            "Name": "redis", "Driver": "docker", "User": "", "Lifecycle": null,
            "Config": {"image": "redis:7", "ports": ["db"]},
            "Constraints": null, "Affinities": null, "Env": null, "Services": null,
            "Resources": {"CPU": null, "Cores": null, "MemoryMB": null, "MemoryMaxMB": null,
                          "DiskMB": null, "Networks": null, "Devices": null},
            "RestartPolicy": null, "Meta": null, "KillTimeout": null, "LogConfig": null,
            "Artifacts": null, "Vault": null, "Templates": null, "DispatchPayload": null,
            "VolumeMounts": null, "Leader": false, "ShutdownDelay": 0, "KillSignal": "",
            "Kind": "", "ScalingPolicies": null
          }
        ]
      }
    ],
    "Update": null, "Multiregion": null, "Periodic": null, "ParameterizedJob": null,
    "Reschedule": null, "Migrate": null, "Meta": null, "ConsulToken": null, "VaultToken": null,
    "Stop": null, "ParentID": null, "Dispatched": false, "Payload": null, "Status": null,
    "StatusDescription": null, "Stable": null, "Version": null, "SubmitTime": null,
    "CreateIndex": null, "ModifyIndex": null, "JobModifyIndex": null
  }
}
"""


# ---------------------------------------------------------------------------------------------
# The default policies themselves


@pytest.mark.parametrize(
    ("job_type", "expected"),
    [
        # Nomad's DefaultServiceJobReschedulePolicy.
        (
            "service",
            {
                "attempts": 0,
                "interval": 0,
                "delay": 30 * SECOND,
                "delay_function": "exponential",
                "max_delay": 1 * HOUR,
                "unlimited": True,
            },
        ),
        # Nomad's DefaultBatchJobReschedulePolicy.
        (
            "batch",
            {
                "attempts": 1,
                "interval": 24 * HOUR,
                "delay": 5 * SECOND,
                "delay_function": "constant",
                "max_delay": 0,
                "unlimited": False,
            },
        ),
        ("system", None),
        ("sysbatch", None),
    ],
)
def test_default_reschedule_policy(job_type: str, expected: dict[str, Any] | None) -> None:
    assert dump(default_reschedule_policy(job_type)) == expected


@pytest.mark.parametrize(
    ("job_type", "attempts", "interval"),
    [
        ("service", 2, 30 * MINUTE),
        ("system", 2, 30 * MINUTE),
        ("batch", 3, 24 * HOUR),
        ("sysbatch", 3, 24 * HOUR),
    ],
)
def test_default_restart_policy(job_type: str, attempts: int, interval: int) -> None:
    rp = default_restart_policy(job_type)
    assert (rp.attempts, rp.interval, rp.delay, rp.mode) == (attempts, interval, 15 * SECOND, "fail")


def test_default_update_migrate_disconnect_disk() -> None:
    assert dump(default_update_strategy()) == {
        "stagger": 30 * SECOND,
        "max_parallel": 1,
        "health_check": "checks",
        "min_healthy_time": 10 * SECOND,
        "healthy_deadline": 5 * MINUTE,
        "progress_deadline": 10 * MINUTE,
        "auto_revert": False,
        "auto_promote": False,
        "canary": 0,
    }
    assert dump(default_migrate_strategy()) == {
        "max_parallel": 1,
        "health_check": "checks",
        "min_healthy_time": 10 * SECOND,
        "healthy_deadline": 5 * MINUTE,
    }
    d = default_disconnect()
    assert (d.lost_after, d.replace, d.reconcile) == (0, True, "best_score")
    assert default_ephemeral_disk().size_mb == 300


@pytest.mark.parametrize(
    "factory",
    [
        lambda: default_reschedule_policy("service"),
        lambda: default_restart_policy("batch"),
        default_update_strategy,
        default_migrate_strategy,
        default_disconnect,
        default_ephemeral_disk,
    ],
)
def test_defaults_are_fresh_and_fully_set(factory: Any) -> None:
    first, second = factory(), factory()
    assert first == second and first is not second
    assert all_fields_set(first)


# ---------------------------------------------------------------------------------------------
# Job-level defaults


@pytest.mark.parametrize(
    ("doc", "field", "expected"),
    [
        ({"ID": "api"}, "name", "api"),
        ({"ID": "api", "Name": "API server"}, "name", "API server"),
        ({"ID": "api", "Name": ""}, "name", "api"),
        ({"ID": "api"}, "namespace", "default"),
        ({"ID": "api", "Namespace": ""}, "namespace", "default"),
        ({"ID": "api", "Namespace": "prod"}, "namespace", "prod"),
        ({"ID": "api", "Region": None}, "region", "global"),
        ({"ID": "api", "Region": ""}, "region", "global"),
        ({"ID": "api", "Region": "eu"}, "region", "eu"),
        ({"ID": "api", "Datacenters": None}, "datacenters", ["*"]),
        ({"ID": "api", "Datacenters": []}, "datacenters", ["*"]),
        ({"ID": "api", "Datacenters": ["dc1", "dc2"]}, "datacenters", ["dc1", "dc2"]),
        ({"ID": "api", "Priority": 0}, "priority", 50),
        ({"ID": "api", "Priority": None}, "priority", 50),
        ({"ID": "api", "Priority": 80}, "priority", 80),
        ({"ID": "api", "Type": None}, "type", "service"),
        ({"ID": "api", "Type": ""}, "type", "service"),
        ({"ID": "api", "Type": "batch"}, "type", "batch"),
        ({"ID": "api", "NodePool": ""}, "node_pool", "default"),
        ({"ID": "api", "NodePool": "gpu"}, "node_pool", "gpu"),
    ],
)
def test_job_defaults(doc: dict[str, Any], field: str, expected: Any) -> None:
    assert getattr(canon(doc), field) == expected


def test_periodic_defaults() -> None:
    job = canon(
        {"ID": "nightly", "Type": "batch", "Periodic": {"Spec": "@daily", "SpecType": "", "TimeZone": ""}}
    )
    assert job.periodic is not None
    assert (job.periodic.enabled, job.periodic.spec_type, job.periodic.time_zone) == (True, "cron", "UTC")


# ---------------------------------------------------------------------------------------------
# Group defaults per job type


@pytest.mark.parametrize("job_type", TYPES)
def test_group_restart_policy_default(job_type: str) -> None:
    tg = canon(job_doc(job_type)).task_groups[0]
    assert tg.restart_policy == default_restart_policy(job_type)


@pytest.mark.parametrize("job_type", TYPES)
def test_group_reschedule_policy_default(job_type: str) -> None:
    """Nomad's per-type defaults; system and sysbatch jobs are never rescheduled."""
    tg = canon(job_doc(job_type)).task_groups[0]
    assert tg.reschedule_policy == default_reschedule_policy(job_type)


@pytest.mark.parametrize(
    ("job_type", "has_update"),
    # Nomad (api Job.Canonicalize) gives service and system jobs the default update block.
    [("service", True), ("system", True), ("batch", False), ("sysbatch", False)],
)
def test_group_update_default(job_type: str, has_update: bool) -> None:
    job = canon(job_doc(job_type))
    expected = default_update_strategy() if has_update else None
    assert job.update == expected
    assert job.task_groups[0].update == expected


@pytest.mark.parametrize(
    ("job_type", "has_migrate"), [("service", True), ("system", False), ("batch", False), ("sysbatch", False)]
)
def test_group_migrate_default(job_type: str, has_migrate: bool) -> None:
    tg = canon(job_doc(job_type)).task_groups[0]
    assert tg.migrate == (default_migrate_strategy() if has_migrate else None)


@pytest.mark.parametrize(
    ("disk", "expected_mb", "sticky"),
    [(None, 300, False), ({}, 300, False), ({"SizeMB": 1024}, 1024, False), ({"Sticky": True}, 300, True)],
)
def test_group_ephemeral_disk(disk: dict[str, Any] | None, expected_mb: int, sticky: bool) -> None:
    tg = canon(job_doc(EphemeralDisk=disk)).task_groups[0]
    assert tg.ephemeral_disk is not None
    assert (tg.ephemeral_disk.size_mb, tg.ephemeral_disk.sticky) == (expected_mb, sticky)


@pytest.mark.parametrize(("count", "expected"), [(None, 1), (0, 0), (1, 1), (7, 7)])
def test_group_count_kept(count: int | None, expected: int) -> None:
    assert canon(job_doc(Count=count)).task_groups[0].count == expected


@pytest.mark.parametrize(
    ("disconnect", "expected"),
    [
        (None, None),
        ({}, {"lost_after": 0, "replace": True, "reconcile": "best_score", "stop_on_client_after": 0}),
        (
            {"LostAfter": 2 * MINUTE, "Replace": None, "Reconcile": None},
            {"lost_after": 2 * MINUTE, "replace": True, "reconcile": "best_score", "stop_on_client_after": 0},
        ),
        (
            {"Replace": False, "Reconcile": ""},
            {"lost_after": 0, "replace": False, "reconcile": "best_score", "stop_on_client_after": 0},
        ),
        (
            {"Reconcile": "keep_original"},
            {"lost_after": 0, "replace": True, "reconcile": "keep_original", "stop_on_client_after": 0},
        ),
    ],
)
def test_group_disconnect(disconnect: dict[str, Any] | None, expected: dict[str, Any] | None) -> None:
    assert dump(canon(job_doc(Disconnect=disconnect)).task_groups[0].disconnect) == expected


# ---------------------------------------------------------------------------------------------
# Merging: only fields the user set override; group > job > default


@pytest.mark.parametrize(
    ("job_type", "group_restart", "expected"),
    [
        (
            "service",
            {"Attempts": 5},
            {"attempts": 5, "interval": 30 * MINUTE, "delay": 15 * SECOND, "mode": "fail"},
        ),
        (
            "batch",
            {"Mode": "delay"},
            {"attempts": 3, "interval": 24 * HOUR, "delay": 15 * SECOND, "mode": "delay"},
        ),
        (
            "service",
            {"Attempts": 0, "Delay": None},
            {"attempts": 0, "interval": 30 * MINUTE, "delay": 15 * SECOND},
        ),
        ("system", {"Interval": HOUR, "Delay": MINUTE}, {"attempts": 2, "interval": HOUR, "delay": MINUTE}),
    ],
)
def test_restart_policy_merge(job_type: str, group_restart: dict[str, Any], expected: dict[str, Any]) -> None:
    rp = canon(job_doc(job_type, RestartPolicy=group_restart)).task_groups[0].restart_policy
    assert rp is not None
    assert {k: getattr(rp, k) for k in expected} == expected


@pytest.mark.parametrize(
    ("job_type", "job_level", "group_level", "expected"),
    [
        # Group only: its fields on top of the type default.
        (
            "service",
            None,
            {"Delay": MINUTE},
            {"delay": MINUTE, "delay_function": "exponential", "unlimited": True},
        ),
        # Job only: inherited by the group.
        (
            "service",
            {"DelayFunction": "fibonacci"},
            None,
            {"delay": 30 * SECOND, "delay_function": "fibonacci"},
        ),
        # Both: the group wins where it speaks, the job elsewhere, the default for the rest.
        (
            "service",
            {"Delay": MINUTE, "MaxDelay": 2 * HOUR},
            {"Delay": 2 * MINUTE},
            {"delay": 2 * MINUTE, "max_delay": 2 * HOUR, "delay_function": "exponential", "unlimited": True},
        ),
        (
            "batch",
            {"Attempts": 5, "Interval": 2 * HOUR},
            {"Attempts": 2},
            {"attempts": 2, "interval": 2 * HOUR, "delay": 5 * SECOND, "delay_function": "constant"},
        ),
        # A null in the group does not erase the job's value.
        ("batch", {"Attempts": 4}, {"Attempts": None}, {"attempts": 4, "interval": 24 * HOUR}),
        # Explicit falsy values in the group beat truthy ones above.
        ("service", {"Unlimited": True}, {"Unlimited": False}, {"unlimited": False}),
    ],
)
def test_reschedule_precedence(
    job_type: str,
    job_level: dict[str, Any] | None,
    group_level: dict[str, Any] | None,
    expected: dict[str, Any],
) -> None:
    doc = job_doc(job_type, ReschedulePolicy=group_level)
    doc["Reschedule"] = job_level
    rp = canon(doc).task_groups[0].reschedule_policy
    assert rp is not None
    assert {k: getattr(rp, k) for k in expected} == expected


@pytest.mark.parametrize("job_type", ["service", "batch"])
@pytest.mark.parametrize("level", ["group", "job"])
def test_explicit_reschedule_disable_is_preserved(job_type: str, level: str) -> None:
    """Attempts 0 and unlimited false disables rescheduling; defaults must not undo it."""
    disable = {"Attempts": 0, "Unlimited": False}
    doc = job_doc(job_type, ReschedulePolicy=disable if level == "group" else None)
    if level == "job":
        doc["Reschedule"] = disable
    job = canon(doc)
    rp = job.task_groups[0].reschedule_policy
    assert rp is not None
    assert (rp.attempts, rp.unlimited, rp.enabled()) == (0, False, False)
    assert validate_job(job) == []
    assert canonicalize(job).task_groups[0].reschedule_policy == rp


def test_group_disable_beats_job_level_policy() -> None:
    doc = job_doc("batch", ReschedulePolicy={"Attempts": 0})
    doc["Reschedule"] = {"Attempts": 10, "Interval": 10 * HOUR}
    rp = canon(doc).task_groups[0].reschedule_policy
    assert rp is not None and not rp.enabled()


@pytest.mark.parametrize("job_type", ["system", "sysbatch"])
def test_system_reschedule_given_is_kept_for_validation(job_type: str) -> None:
    """Nomad rejects a reschedule block on system jobs rather than silently dropping it."""
    doc = job_doc(job_type, ReschedulePolicy={"Attempts": 3})
    rp = canon(doc).task_groups[0].reschedule_policy
    assert rp is not None and rp.attempts == 3


def test_service_group_attempts_without_unlimited_false_stays_unlimited() -> None:
    """Like Nomad: the service default has unlimited true, so attempts alone is ambiguous."""
    rp = canon(job_doc(ReschedulePolicy={"Attempts": 3, "Interval": HOUR})).task_groups[0].reschedule_policy
    assert rp is not None and (rp.attempts, rp.unlimited) == (3, True)


@pytest.mark.parametrize(
    ("job_type", "job_update", "group_update", "expected"),
    [
        # Job-level block pushed into the group, defaults for the rest.
        (
            "service",
            {"MaxParallel": 3},
            None,
            {"max_parallel": 3, "canary": 0, "min_healthy_time": 10 * SECOND},
        ),
        # Group block on top of the job block.
        (
            "service",
            {"MaxParallel": 3, "Canary": 1},
            {"Canary": 2, "AutoPromote": True},
            {"max_parallel": 3, "canary": 2, "auto_promote": True, "healthy_deadline": 5 * MINUTE},
        ),
        # Group only.
        ("service", None, {"HealthCheck": "task_states"}, {"max_parallel": 1, "health_check": "task_states"}),
        # max_parallel 0 is explicit: no rolling deployments.
        ("service", {"MaxParallel": 0}, None, {"max_parallel": 0, "stagger": 30 * SECOND}),
        ("service", None, {"MaxParallel": 0}, {"max_parallel": 0}),
        ("system", {"MaxParallel": 2}, None, {"max_parallel": 2}),
        # Batch jobs get no default, but a block the user wrote is kept (validation rejects it).
        ("batch", None, {"MaxParallel": 2}, {"max_parallel": 2, "stagger": 30 * SECOND}),
    ],
)
def test_update_merge(
    job_type: str,
    job_update: dict[str, Any] | None,
    group_update: dict[str, Any] | None,
    expected: dict[str, Any],
) -> None:
    doc = job_doc(job_type, Update=group_update)
    doc["Update"] = job_update
    up = canon(doc).task_groups[0].update
    assert up is not None
    assert {k: getattr(up, k) for k in expected} == expected


def test_update_max_parallel_zero_means_no_rolling() -> None:
    up = canon(job_doc(Update={"MaxParallel": 0})).task_groups[0].update
    assert up is not None and not up.rolling()
    default = canon(job_doc()).task_groups[0].update
    assert default is not None and default.rolling()


def test_empty_job_update_is_not_inherited() -> None:
    """api UpdateStrategy.Empty: a job-level block with every field zero is not pushed down."""
    doc = job_doc("service")
    doc["Update"] = {
        "Stagger": 0,
        "MaxParallel": 0,
        "HealthCheck": "",
        "MinHealthyTime": 0,
        "HealthyDeadline": 0,
        "ProgressDeadline": 0,
        "AutoRevert": False,
        "AutoPromote": False,
        "Canary": 0,
    }
    assert canon(doc).task_groups[0].update is None


@pytest.mark.parametrize(
    ("job_type", "job_migrate", "group_migrate", "expected"),
    [
        ("service", None, {"MaxParallel": 3}, {"max_parallel": 3, "health_check": "checks"}),
        ("service", {"MaxParallel": 2}, None, {"max_parallel": 2, "healthy_deadline": 5 * MINUTE}),
        (
            "service",
            {"MaxParallel": 2, "HealthCheck": "task_states"},
            {"MaxParallel": 4},
            {"max_parallel": 4, "health_check": "task_states"},
        ),
        ("batch", {"MaxParallel": 2}, None, {"max_parallel": 2}),
    ],
)
def test_migrate_merge(
    job_type: str,
    job_migrate: dict[str, Any] | None,
    group_migrate: dict[str, Any] | None,
    expected: dict[str, Any],
) -> None:
    doc = job_doc(job_type, Migrate=group_migrate)
    doc["Migrate"] = job_migrate
    mg = canon(doc).task_groups[0].migrate
    assert mg is not None
    assert {k: getattr(mg, k) for k in expected} == expected


def test_overlay_only_uses_set_fields() -> None:
    base = default_reschedule_policy("service")
    assert base is not None
    layer = ReschedulePolicy.model_validate({"Delay": MINUTE, "Attempts": None})
    out = overlay(base, layer, None)
    assert (out.delay, out.attempts, out.unlimited) == (MINUTE, 0, True)
    assert base.delay == 30 * SECOND  # base untouched


# ---------------------------------------------------------------------------------------------
# Tasks and placement blocks


@pytest.mark.parametrize(
    ("kill_timeout", "expected"), [(None, 5 * SECOND), (0, 5 * SECOND), (30 * SECOND, 30 * SECOND)]
)
def test_task_kill_timeout(kill_timeout: int | None, expected: int) -> None:
    doc = job_doc()
    doc["TaskGroups"][0]["Tasks"][0]["KillTimeout"] = kill_timeout
    assert canon(doc).task_groups[0].tasks[0].kill_timeout == expected


@pytest.mark.parametrize(
    ("logs", "expected"),
    [
        (None, (10, 10)),
        ({}, (10, 10)),
        ({"MaxFiles": None, "MaxFileSizeMB": 5}, (10, 5)),
        ({"MaxFiles": 2}, (2, 10)),
        ({"MaxFiles": 0, "MaxFileSizeMB": 0}, (0, 0)),  # kept, for validation to refuse
    ],
)
def test_task_log_config(logs: dict[str, Any] | None, expected: tuple[int, int]) -> None:
    doc = job_doc()
    doc["TaskGroups"][0]["Tasks"][0]["LogConfig"] = logs
    out = canon(doc).task_groups[0].tasks[0].log_config
    assert out is not None and (out.max_files, out.max_file_size_mb) == expected
    assert out.to_api() == {"MaxFiles": expected[0], "MaxFileSizeMB": expected[1], "Disabled": False}


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (None, (100, 0, 300)),
        ({}, (100, 0, 300)),
        ({"CPU": None, "MemoryMB": None}, (100, 0, 300)),
        ({"CPU": 500, "MemoryMB": 1024}, (500, 0, 1024)),
        # Cores without CPU: CPU is 0, not the default (api Resources.Canonicalize).
        ({"Cores": 2}, (0, 2, 300)),
        # Both given explicitly are kept as given (validation rejects the pair).
        ({"Cores": 2, "CPU": 500}, (500, 2, 300)),
    ],
)
def test_task_resources(resources: dict[str, Any] | None, expected: tuple[int, int, int]) -> None:
    doc = job_doc()
    doc["TaskGroups"][0]["Tasks"][0]["Resources"] = resources
    r = canon(doc).task_groups[0].tasks[0].resources
    assert (r.cpu, r.cores, r.memory_mb) == expected


def test_null_weights_and_operands_take_defaults() -> None:
    doc = job_doc(
        Spreads=[{"Attribute": "${node.datacenter}", "Weight": None, "SpreadTarget": None}],
        Affinities=[{"LTarget": "${node.class}", "RTarget": "large", "Operand": None, "Weight": None}],
        Constraints=[{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": None}],
    )
    doc["Affinities"] = [{"LTarget": "${meta.rack}", "RTarget": "r1", "Operand": "=", "Weight": None}]
    doc["Spreads"] = [{"Attribute": "${meta.rack}", "Weight": None}]
    job = canon(doc)
    tg = job.task_groups[0]
    assert (tg.spreads[0].weight, tg.spreads[0].spread_target) == (50, [])
    assert (tg.affinities[0].operand, tg.affinities[0].weight) == ("=", 50)
    assert tg.constraints[0].operand == "="
    assert (job.affinities[0].weight, job.spreads[0].weight) == (50, 50)
    assert validate_job(job) == []


# ---------------------------------------------------------------------------------------------
# Nomad's own JSON, purity, idempotence, round trips


def test_nomad_output_json_with_nulls_canonicalizes_to_defaults() -> None:
    job = canonicalize(Job.model_validate(json.loads(NOMAD_OUTPUT_JSON)["Job"]))
    assert (job.id, job.name, job.type, job.namespace, job.region) == (
        "example",
        "example",
        "service",
        "default",
        "global",
    )
    assert (job.priority, job.datacenters, job.constraints, job.meta) == (50, ["*"], [], {})
    tg = job.task_groups[0]
    assert tg.count == 1
    assert tg.restart_policy == default_restart_policy("service")
    assert tg.reschedule_policy == default_reschedule_policy("service")
    assert tg.update == default_update_strategy()
    assert tg.migrate == default_migrate_strategy()
    assert tg.ephemeral_disk == default_ephemeral_disk()
    assert tg.disconnect is None
    assert (tg.spreads, tg.affinities, tg.constraints) == ([], [], [])
    task = tg.tasks[0]
    assert (task.kill_timeout, task.resources.cpu, task.resources.memory_mb) == (5 * SECOND, 100, 300)
    assert task.config == {"image": "redis:7", "ports": ["db"]}
    assert validate_job(job) == []


RICH_JOB: dict[str, Any] = {
    "ID": "shop",
    "Type": "service",
    "Priority": 70,
    "Datacenters": ["dc1", "dc2"],
    "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
    "Spreads": [
        {"Attribute": "${node.datacenter}", "Weight": 80, "SpreadTarget": [{"Value": "dc1", "Percent": 70}]}
    ],
    "Update": {"MaxParallel": 2, "Canary": 1},
    "Reschedule": {"Delay": MINUTE},
    "Meta": {"team": "checkout"},
    "TaskGroups": [
        {
            "Name": "api",
            "Count": 3,
            "Affinities": [{"LTarget": "${node.class}", "RTarget": "big", "Operand": "=", "Weight": -30}],
            "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
            "Disconnect": {"LostAfter": 5 * MINUTE},
            "Tasks": [
                {
                    "Name": "app",
                    "Driver": "exec",
                    "Config": {"command": "/bin/app", "args": ["-v"]},
                    "Env": {"MODE": "prod"},
                    "Resources": {"CPU": 250, "MemoryMB": 512},
                }
            ],
        },
        {
            "Name": "worker",
            "Update": {"MaxParallel": 0},
            "Tasks": [{"Name": "w", "Driver": "docker", "Config": {"image": "redis:7"}}],
        },
    ],
}

IDEMPOTENCE_CASES = [pytest.param(job_doc(t), id=f"minimal-{t}") for t in TYPES] + [
    pytest.param(RICH_JOB, id="rich"),
    pytest.param(json.loads(NOMAD_OUTPUT_JSON)["Job"], id="nomad-output"),
    pytest.param({"ID": "empty"}, id="no-groups"),
    pytest.param(job_doc("system", ReschedulePolicy={"Attempts": 2}), id="system-with-reschedule"),
]


@pytest.mark.parametrize("doc", IDEMPOTENCE_CASES)
def test_idempotent(doc: dict[str, Any]) -> None:
    once = canon(doc)
    twice = canonicalize(once)
    assert twice == once
    assert twice.model_dump() == once.model_dump()
    assert all_fields_set(once) and all_fields_set(twice)


@pytest.mark.parametrize("doc", IDEMPOTENCE_CASES)
def test_canonical_survives_json_round_trip(doc: dict[str, Any]) -> None:
    once = canon(doc)
    again = canonicalize(Job.model_validate(json.loads(json.dumps(once.to_api()))))
    assert again == once


@pytest.mark.parametrize("doc", IDEMPOTENCE_CASES)
def test_input_is_not_mutated(doc: dict[str, Any]) -> None:
    original_doc = copy.deepcopy(doc)
    job = Job.model_validate(doc)
    before = (job.model_dump(), _fields_sets(job))
    out = canonicalize(job)
    assert (job.model_dump(), _fields_sets(job)) == before
    assert doc == original_doc
    assert out is not job
    for tg_in, tg_out in zip(job.task_groups, out.task_groups, strict=True):
        assert tg_in is not tg_out


def _fields_sets(model: NomadModel) -> list[set[str]]:
    """Every nested model's fields_set, in a stable order."""
    out = [set(model.model_fields_set)]
    for name in type(model).model_fields:
        value = getattr(model, name)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, NomadModel):
                out.extend(_fields_sets(v))
    return out


@pytest.mark.parametrize("doc", [RICH_JOB, json.loads(NOMAD_OUTPUT_JSON)["Job"], job_doc("batch")])
def test_round_trip_json_model_api_model(doc: dict[str, Any]) -> None:
    """Job JSON -> model -> to_api() -> model is equal (canonical or not)."""
    model = Job.model_validate(doc)
    assert Job.model_validate(model.to_api()) == model
    assert Job.model_validate(json.loads(json.dumps(model.to_api()))) == model
    canonical = canonicalize(model)
    assert Job.model_validate(canonical.to_api()) == canonical


def test_rich_job_canonical_values() -> None:
    job = canon(RICH_JOB)
    api, worker = job.task_groups
    # Group disable beats the job-level reschedule block; the worker inherits the job's delay.
    assert api.reschedule_policy is not None and not api.reschedule_policy.enabled()
    assert worker.reschedule_policy is not None
    assert (worker.reschedule_policy.delay, worker.reschedule_policy.unlimited) == (MINUTE, True)
    # Job-level update pushed into 'api'; 'worker' turned rolling updates off.
    assert api.update is not None and (api.update.max_parallel, api.update.canary) == (2, 1)
    assert worker.update is not None and (worker.update.max_parallel, worker.update.canary) == (0, 1)
    assert api.disconnect is not None and api.disconnect.replace is True
    assert api.affinities[0].weight == -30
    assert job.spreads[0].weight == 80
    assert validate_job(job) == []


@pytest.mark.parametrize(
    ("group_policy", "task_policy", "expected"),
    [
        # No restart block anywhere: the task takes the group's, Nomad's default for the type.
        (None, None, {"Attempts": 2, "Interval": 30 * MINUTE, "Delay": 15 * SECOND, "Mode": "fail"}),
        # The group's block, and a task without one: the group's.
        (
            {"Attempts": 7},
            None,
            {"Attempts": 7, "Interval": 30 * MINUTE, "Delay": 15 * SECOND, "Mode": "fail"},
        ),
        # The task's block is laid over the group's, member by member (api RestartPolicy.Merge).
        (
            {"Attempts": 7, "Mode": "delay"},
            {"Attempts": 1, "Delay": 5 * SECOND},
            {"Attempts": 1, "Interval": 30 * MINUTE, "Delay": 5 * SECOND, "Mode": "delay"},
        ),
        (
            None,
            {"Mode": "delay"},
            {"Attempts": 2, "Interval": 30 * MINUTE, "Delay": 15 * SECOND, "Mode": "delay"},
        ),
    ],
)
def test_task_restart_policy_from_its_group(
    group_policy: dict[str, Any] | None, task_policy: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    doc = job_doc("service", **({"RestartPolicy": group_policy} if group_policy else {}))
    if task_policy is not None:
        doc["TaskGroups"][0]["Tasks"][0]["RestartPolicy"] = task_policy
    job = canon(doc)
    task = job.task_groups[0].tasks[0]
    assert task.restart_policy is not None
    got = task.restart_policy.to_api()
    assert {k: got[k] for k in expected} == expected
    assert canonicalize(job) == job  # idempotent
    # The group's own policy is untouched by its task's.
    assert (
        job.task_groups[0].restart_policy
        == canon(job_doc("service", **({"RestartPolicy": group_policy} if group_policy else {})))
        .task_groups[0]
        .restart_policy
    )


def test_a_tasks_bad_restart_block_is_refused_naming_the_task() -> None:
    doc = job_doc("service")
    doc["TaskGroups"][0]["Tasks"][0]["RestartPolicy"] = {"Mode": "sometimes"}
    problems = validate_job(canon(doc))
    assert any("server" in p and "sometimes" in p for p in problems), problems
