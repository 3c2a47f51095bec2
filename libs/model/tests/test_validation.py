"""Validation: each of Nomad's rules, the messages' places, and every problem at once."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Job, ReschedulePolicy, Resources, Task, TaskGroup
from drover.model.canonicalize import canonicalize
from drover.model.durations import HOUR, MICROSECOND, MILLISECOND, MINUTE, SECOND
from drover.model.validation import format_duration, reschedule_problems, validate_job

G = "Task group 'web'"
T = "Task group 'web', task 'server'"


def job_doc(job_type: str = "service") -> dict[str, Any]:
    """A valid job in Nomad's JSON form: one group 'web' with one task 'server'."""
    return {
        "ID": "example",
        "Type": job_type,
        "TaskGroups": [
            {
                "Name": "web",
                "Count": 1,
                "Tasks": [{"Name": "server", "Driver": "docker", "Config": {"image": "redis:7"}}],
            }
        ],
    }


def put(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at a dotted path like ``TaskGroups.0.Tasks.0.Driver``."""
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    node: Any = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    if isinstance(node, list) and keys[-1] == len(node):
        node.append(value)
    else:
        node[keys[-1]] = value


def problems_of(changes: dict[str, Any], job_type: str = "service") -> list[str]:
    doc = job_doc(job_type)
    for path, value in changes.items():
        put(doc, path, value)
    return validate_job(canonicalize(Job.model_validate(doc)))


TG = "TaskGroups.0"
TASK = "TaskGroups.0.Tasks.0"
RES = "TaskGroups.0.Tasks.0.Resources"


# ---------------------------------------------------------------------------------------------
# Valid jobs


@pytest.mark.parametrize("job_type", ["service", "batch", "system", "sysbatch"])
def test_minimal_jobs_are_valid(job_type: str) -> None:
    assert problems_of({}, job_type) == []


@pytest.mark.parametrize(
    ("job_type", "changes"),
    [
        ("batch", {"Periodic": {"Spec": "*/15 * * * *"}}),
        ("sysbatch", {"Periodic": {"Spec": "@hourly", "TimeZone": "Europe/Berlin"}}),
        ("service", {"Periodic": {"Enabled": False}}),
        # As Nomad writes it today: several crons (JSON `Specs`, HCL `crons`).
        ("batch", {"Periodic": {"Crons": ["*/5 * * * *"]}}),
        ("batch", {"Periodic": {"Specs": ["0 2 * * *", "30 14 * * MON-FRI"], "TimeZone": "Asia/Tokyo"}}),
        ("batch", {"Periodic": {"Spec": "0 30 2 * * * *", "ProhibitOverlap": True}}),
        ("batch", {"Periodic": {"Spec": "1767225600,1767225660", "SpecType": "test"}}),
        # Disabling with attempts 0 / unlimited false; the other fields do not matter then.
        ("service", {f"{TG}.ReschedulePolicy": {"Attempts": 0, "Unlimited": False, "Delay": 0}}),
        ("batch", {f"{TG}.ReschedulePolicy": {"Attempts": 0, "Unlimited": False}}),
        (
            "batch",
            {
                f"{TG}.ReschedulePolicy": {
                    "Attempts": 0,
                    "Unlimited": True,
                    "DelayFunction": "fibonacci",
                    "MaxDelay": MINUTE,
                }
            },
        ),
        ("service", {f"{TG}.ReschedulePolicy": {"Attempts": 3, "Interval": HOUR, "Unlimited": False}}),
        ("system", {f"{TG}.Count": 0}),
        ("system", {f"{TG}.Count": 1}),
        ("sysbatch", {f"{TG}.Count": 5}),
        ("service", {f"{TG}.Count": 0}),
        ("service", {f"{TG}.Constraints": [{"Operand": "distinct_hosts"}]}),
        ("service", {f"{TG}.Constraints": [{"LTarget": "${meta.rack}", "Operand": "distinct_property"}]}),
        (
            "service",
            {f"{TG}.Constraints": [{"LTarget": "${attr.os}", "Operand": "regexp", "RTarget": "^linux$"}]},
        ),
        (
            "service",
            {f"{TG}.Constraints": [{"LTarget": "${attr.v}", "Operand": "version", "RTarget": ">= 1.2, < 2"}]},
        ),
        (
            "service",
            {f"{TG}.Constraints": [{"LTarget": "${attr.v}", "Operand": "version", "RTarget": "~> 1.2.3"}]},
        ),
        (
            "service",
            {
                f"{TG}.Constraints": [
                    {"LTarget": "${attr.v}", "Operand": "semver", "RTarget": ">= 1.2.3-beta"}
                ]
            },
        ),
        ("service", {f"{TG}.Constraints": [{"LTarget": "${attr.driver.docker}", "Operand": "is_set"}]}),
        ("service", {f"{TG}.Affinities": [{"LTarget": "${node.class}", "RTarget": "big", "Weight": -100}]}),
        ("sysbatch", {f"{TG}.Affinities": [{"LTarget": "${node.class}", "RTarget": "big", "Weight": 10}]}),
        ("service", {f"{TG}.Spreads": [{"Attribute": "${node.datacenter}", "Weight": 100}]}),
        (
            "service",
            {
                f"{TG}.Spreads": [
                    {
                        "Attribute": "${node.datacenter}",
                        "SpreadTarget": [{"Value": "dc1", "Percent": 60}, {"Value": "dc2", "Percent": 40}],
                    }
                ]
            },
        ),
        ("service", {f"{TG}.Update": {"ProgressDeadline": 0}}),
        ("service", {f"{TG}.Update": {"MaxParallel": 0}}),
        ("service", {f"{TG}.Update": {"Canary": 2, "AutoPromote": True, "HealthCheck": "manual"}}),
        ("service", {f"{TG}.Disconnect": {"LostAfter": MINUTE, "Reconcile": "longest_running"}}),
        ("batch", {f"{TG}.Disconnect": {"StopOnClientAfter": MINUTE}}),
        ("service", {f"{RES}": {"Cores": 2}}),
        ("service", {f"{RES}": {"MemoryMB": 256, "MemoryMaxMB": -1}}),
        ("service", {f"{TG}.RestartPolicy": {"Attempts": 0, "Mode": "fail"}}),
        ("service", {f"{TG}.RestartPolicy": {"Attempts": 3, "Mode": "delay", "Delay": 10 * SECOND}}),
        # Exponential: 30s, 1m, 2m, 4m fit in 10m.
        (
            "batch",
            {
                f"{TG}.ReschedulePolicy": {
                    "Attempts": 4,
                    "Interval": 10 * MINUTE,
                    "Delay": 30 * SECOND,
                    "DelayFunction": "exponential",
                    "MaxDelay": HOUR,
                }
            },
        ),
    ],
)
def test_valid_variants(job_type: str, changes: dict[str, Any]) -> None:
    assert problems_of(changes, job_type) == []


# ---------------------------------------------------------------------------------------------
# One rule at a time: (changes, job type, expected place, expected words)

CASES: list[Any] = [
    # Job
    ({"ID": ""}, "service", "Job", "ID is missing"),
    ({"ID": "my job"}, "service", "Job", "contains a space"),
    ({"ID": "my\0job"}, "service", "Job", "null character"),
    ({"Type": "cron"}, "service", "Job", "unknown job type 'cron'"),
    ({"Priority": 101}, "service", "Job", "priority 101 is outside 1..100"),
    ({"Priority": -3}, "service", "Job", "priority -3 is outside 1..100"),
    ({"Datacenters": ["dc1", ""]}, "service", "Job", "datacenter name is empty"),
    ({"TaskGroups": []}, "service", "Job", "has no task groups"),
    ({"Periodic": {"Spec": ""}}, "batch", "Job", "spec is empty"),
    ({"Periodic": {"Spec": "@daily"}}, "service", "Job", "only allowed for batch and sysbatch"),
    ({"Periodic": {"Spec": "every day"}}, "batch", "Job", "not a valid cron expression"),
    ({"Periodic": {"Spec": "@daily", "SpecType": "rrule"}}, "batch", "Job", "spec type 'rrule' is unknown"),
    ({"Periodic": {"Crons": []}}, "batch", "Job", "spec is empty"),
    (
        {"Periodic": {"Crons": ["*/5 * * * *", "5 25 * * *"]}},
        "batch",
        "Job",
        "'5 25 * * *' is not a valid cron",
    ),
    ({"Periodic": {"Spec": "@daily", "Crons": ["@hourly"]}}, "batch", "Job", "not both"),
    ({"Periodic": {"Crons": ["@daily"]}}, "service", "Job", "only allowed for batch and sysbatch"),
    ({"Periodic": {"Spec": "soon", "SpecType": "test"}}, "batch", "Job", "not a list of unix times"),
    (
        {"Periodic": {"Spec": "@daily", "TimeZone": "Mars/Olympus"}},
        "batch",
        "Job",
        "time zone 'Mars/Olympus'",
    ),
    # Groups
    (
        {"TaskGroups.1": {"Name": "web", "Tasks": [{"Name": "t", "Driver": "exec"}]}},
        "service",
        "Task group 'web'",
        "group 2 has the same name as group 1",
    ),
    ({f"{TG}.Name": ""}, "service", "Task group 1", "name is empty"),
    ({f"{TG}.Count": -1}, "service", G, "count -1 is negative"),
    ({f"{TG}.Count": -1}, "system", G, "count -1 is negative"),
    ({f"{TG}.Count": 3}, "system", G, "count 3 is above 1"),
    ({f"{TG}.Tasks": []}, "service", G, "has no tasks"),
    (
        {f"{TG}.EphemeralDisk": {"SizeMB": 5}},
        "service",
        G,
        "ephemeral disk 5 MB is below the minimum of 10 MB",
    ),
    # Tasks
    (
        {f"{TG}.Tasks.1": {"Name": "server", "Driver": "exec"}},
        "service",
        G,
        "task 2 has the same name as task 1",
    ),
    ({f"{TASK}.Name": ""}, "service", G, "task 1 has no name"),
    ({f"{TASK}.Driver": ""}, "service", T, "no driver given"),
    ({f"{TASK}.Name": "alloc"}, "service", "Task group 'web', task 'alloc'", 'may not be named "alloc"'),
    ({f"{TASK}.Name": "a/b"}, "service", "Task group 'web', task 'a/b'", "contains a slash"),
    ({f"{TASK}.KillTimeout": -SECOND}, "service", T, "kill timeout -1s is negative"),
    (
        {f"{TASK}.KillTimeout": 20 * MINUTE},
        "service",
        T,
        "kill timeout 20m0s is longer than the group's progress deadline 10m0s",
    ),
    (
        {f"{TASK}.Leader": True, f"{TG}.Tasks.1": {"Name": "side", "Driver": "exec", "Leader": True}},
        "service",
        G,
        "more than one task is marked as leader",
    ),
    # Resources
    ({f"{RES}.CPU": 0}, "service", T, "cpu 0 MHz is below the minimum of 1 MHz"),
    ({f"{RES}.MemoryMB": 5}, "service", T, "memory 5 MB is below the minimum of 10 MB"),
    ({f"{RES}.DiskMB": -1}, "service", T, "disk -1 MB is negative"),
    ({f"{RES}.DiskMB": 100}, "service", T, "ephemeral_disk"),
    ({f"{RES}": {"Cores": 2, "CPU": 500}}, "service", T, "cpu or for cores, not both"),
    ({f"{RES}.Cores": -1}, "service", T, "cores -1 is negative"),
    (
        {f"{RES}": {"MemoryMB": 512, "MemoryMaxMB": 256}},
        "service",
        T,
        "memory_max 256 MB is below memory 512 MB",
    ),
    # Constraints
    (
        {"Constraints": [{"LTarget": "${attr.x}", "RTarget": "1", "Operand": "~="}]},
        "service",
        "Job",
        "unknown op",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "", "RTarget": "linux"}]},
        "service",
        G,
        "attribute (LTarget) is empty",
    ),
    ({f"{TG}.Constraints": [{"LTarget": "${attr.os}", "RTarget": ""}]}, "service", G, "needs a value"),
    (
        {f"{TG}.Constraints": [{"LTarget": "${x.y}", "RTarget": "1"}]},
        "service",
        G,
        "not one Nomad can resolve",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "$attr.os", "RTarget": "1"}]},
        "service",
        G,
        "lacks its opening brace",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${attr.os", "RTarget": "1"}]},
        "service",
        G,
        "lacks its closing brace",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${attr.os}", "Operand": "regexp", "RTarget": "(["}]},
        "service",
        G,
        "regular expression '([' does not compile",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${attr.v}", "Operand": "version", "RTarget": "newest"}]},
        "service",
        G,
        "not a valid version constraint",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${attr.v}", "Operand": "version", "RTarget": ""}]},
        "service",
        G,
        "not a valid version constraint",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${attr.v}", "Operand": "semver", "RTarget": "~> 1.2"}]},
        "service",
        G,
        "not a valid semver constraint",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${attr.v}", "Operand": "semver", "RTarget": "1.2.3.4"}]},
        "service",
        G,
        "not a valid semver constraint",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${meta.tags}", "Operand": "set_contains", "RTarget": ""}]},
        "service",
        G,
        "operator 'set_contains' needs a value",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${meta.tags}", "Operand": "set_contains_any"}]},
        "service",
        G,
        "operator 'set_contains_any' needs a value",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${meta.a}", "Operand": "is_set", "RTarget": "x"}]},
        "service",
        G,
        "takes no value",
    ),
    (
        {f"{TG}.Constraints": [{"LTarget": "${meta.rack}", "Operand": "distinct_property", "RTarget": "0"}]},
        "service",
        G,
        "count of at least 1",
    ),
    (
        {
            f"{TG}.Constraints": [
                {"LTarget": "${meta.rack}", "Operand": "distinct_property", "RTarget": "two"}
            ]
        },
        "service",
        G,
        "not a whole number",
    ),
    ({f"{TASK}.Constraints": [{"Operand": "distinct_hosts"}]}, "service", T, "not tasks"),
    # Affinities
    (
        {f"{TG}.Affinities": [{"LTarget": "${node.class}", "Operand": "distinct_hosts"}]},
        "service",
        G,
        "'distinct_hosts' is not an affinity operator",
    ),
    (
        {f"{TG}.Affinities": [{"LTarget": "${node.class}", "Operand": "is_set"}]},
        "service",
        G,
        "'is_set' is not an affinity operator",
    ),
    (
        {f"{TG}.Affinities": [{"LTarget": "${node.class}", "RTarget": "big", "Weight": 0}]},
        "service",
        G,
        "weight is 0",
    ),
    (
        {f"{TG}.Affinities": [{"LTarget": "${node.class}", "RTarget": "big", "Weight": 101}]},
        "service",
        G,
        "weight 101 is outside -100..100",
    ),
    (
        {f"{TASK}.Affinities": [{"LTarget": "${node.class}", "RTarget": "big", "Weight": -101}]},
        "service",
        T,
        "weight -101 is outside -100..100",
    ),
    ({"Affinities": [{"LTarget": "", "RTarget": "big"}]}, "service", "Job", "attribute (LTarget) is empty"),
    # Spreads
    ({f"{TG}.Spreads": [{"Attribute": ""}]}, "service", G, "attribute is empty"),
    (
        {f"{TG}.Spreads": [{"Attribute": "${node.datacenter}", "Weight": 0}]},
        "service",
        G,
        "weight 0 must be above 0",
    ),
    (
        {f"{TG}.Spreads": [{"Attribute": "${node.datacenter}", "Weight": 101}]},
        "service",
        G,
        "weight 101 must be",
    ),
    ({"Spreads": [{"Attribute": "${node.datacenter}", "Weight": -5}]}, "service", "Job", "weight -5 must be"),
    (
        {f"{TG}.Spreads": [{"Attribute": "${meta.rack}", "SpreadTarget": [{"Value": "r1", "Percent": 101}]}]},
        "service",
        G,
        "target 'r1' percent 101 is outside 0..100",
    ),
    (
        {f"{TG}.Spreads": [{"Attribute": "${meta.rack}", "SpreadTarget": [{"Value": "r1", "Percent": -1}]}]},
        "service",
        G,
        "target 'r1' percent -1 is outside 0..100",
    ),
    (
        {
            f"{TG}.Spreads": [
                {
                    "Attribute": "${meta.rack}",
                    "SpreadTarget": [{"Value": "r1", "Percent": 60}, {"Value": "r2", "Percent": 50}],
                }
            ]
        },
        "service",
        G,
        "add up to 110, more than 100",
    ),
    (
        {
            f"{TG}.Spreads": [
                {
                    "Attribute": "${meta.rack}",
                    "SpreadTarget": [{"Value": "r1", "Percent": 10}, {"Value": "r1", "Percent": 20}],
                }
            ]
        },
        "service",
        G,
        "target 'r1' is listed more than once",
    ),
    # System jobs: no affinities or spreads anywhere, no reschedule policy (system and sysbatch).
    (
        {"Affinities": [{"LTarget": "${node.class}", "RTarget": "x"}]},
        "system",
        "Job",
        "may not have affinities",
    ),
    (
        {f"{TG}.Affinities": [{"LTarget": "${node.class}", "RTarget": "x"}]},
        "system",
        G,
        "may not have affinities",
    ),
    (
        {f"{TASK}.Affinities": [{"LTarget": "${node.class}", "RTarget": "x"}]},
        "system",
        T,
        "may not have affinities",
    ),
    ({"Spreads": [{"Attribute": "${node.datacenter}"}]}, "system", "Job", "may not have spreads"),
    ({f"{TG}.Spreads": [{"Attribute": "${node.datacenter}"}]}, "system", G, "may not have spreads"),
    ({f"{TG}.ReschedulePolicy": {"Attempts": 1}}, "system", G, "system jobs run on every node"),
    ({"Reschedule": {"Attempts": 1}}, "sysbatch", G, "sysbatch jobs run on every node"),
    # Reschedule (Nomad's structs.ReschedulePolicy.Validate)
    (
        {f"{TG}.ReschedulePolicy": {"Delay": SECOND}},
        "service",
        G,
        "reschedule delay 1s is below the minimum of 5s",
    ),
    (
        {f"{TG}.ReschedulePolicy": {"Interval": 10 * SECOND, "Delay": 5 * SECOND}},
        "batch",
        G,
        "reschedule interval 10s is below the minimum of 15s",
    ),
    (
        {f"{TG}.ReschedulePolicy": {"DelayFunction": "linear"}},
        "service",
        G,
        "delay function 'linear' is unknown",
    ),
    (
        {f"{TG}.ReschedulePolicy": {"Delay": 10 * MINUTE, "MaxDelay": MINUTE}},
        "service",
        G,
        "reschedule max delay 1m0s is below the delay 10m0s",
    ),
    (
        {f"{TG}.ReschedulePolicy": {"DelayFunction": "fibonacci", "MaxDelay": 2 * SECOND, "Delay": SECOND}},
        "service",
        G,
        "max delay 2s is below the minimum of 5s",
    ),
    ({f"{TG}.ReschedulePolicy": {"Attempts": -1}}, "batch", G, "reschedule attempts -1 is negative"),
    (
        {f"{TG}.ReschedulePolicy": {"Attempts": 3, "Interval": HOUR}},
        "service",
        G,
        "attempts 3 with unlimited true is ambiguous",
    ),
    (
        {f"{TG}.ReschedulePolicy": {"Attempts": 3, "Interval": 0, "Unlimited": False}},
        "service",
        G,
        "interval must be above 0",
    ),
    (
        {f"{TG}.ReschedulePolicy": {"Attempts": 10, "Interval": 5 * MINUTE, "Delay": MINUTE}},
        "batch",
        G,
        "allows only 5 of 10 attempts within the interval 5m0s",
    ),
    (
        {
            f"{TG}.ReschedulePolicy": {
                "Attempts": 5,
                "Interval": 5 * MINUTE,
                "Delay": MINUTE,
                "DelayFunction": "exponential",
                "MaxDelay": 10 * MINUTE,
            }
        },
        "batch",
        G,
        "allows only 3 of 5 attempts",
    ),
    (
        {
            f"{TG}.ReschedulePolicy": {
                "Attempts": 6,
                "Interval": 5 * MINUTE,
                "Delay": MINUTE,
                "DelayFunction": "fibonacci",
                "MaxDelay": HOUR,
            }
        },
        "batch",
        G,
        "make the interval at least 8m0s",
    ),
    # Restart
    ({f"{TG}.RestartPolicy": {"Mode": "retry"}}, "service", G, "restart mode 'retry' is unknown"),
    ({f"{TG}.RestartPolicy": {"Attempts": -1}}, "service", G, "restart attempts -1 is negative"),
    ({f"{TG}.RestartPolicy": {"Attempts": 0, "Mode": "delay"}}, "service", G, "0 attempts is ambiguous"),
    ({f"{TG}.RestartPolicy": {"Interval": SECOND}}, "service", G, "restart interval 1s is below the minimum"),
    ({f"{TG}.RestartPolicy": {"Delay": -SECOND}}, "service", G, "restart delay -1s is negative"),
    (
        {f"{TG}.RestartPolicy": {"Attempts": 10, "Delay": MINUTE, "Interval": 5 * MINUTE}},
        "service",
        G,
        "cannot make 10 attempts with delay 1m0s within the interval 5m0s",
    ),
    # Update
    ({f"{TG}.Update": {"MaxParallel": -1}}, "service", G, "max_parallel -1 is negative"),
    ({f"{TG}.Update": {"Canary": -1}}, "service", G, "canary -1 is negative"),
    ({f"{TG}.Update": {"AutoPromote": True}}, "service", G, "auto_promote needs at least one canary"),
    ({f"{TG}.Update": {"HealthCheck": "ping"}}, "service", G, "health check 'ping' is unknown"),
    (
        {f"{TG}.Update": {"MinHealthyTime": 10 * MINUTE}},
        "service",
        G,
        "min_healthy_time 10m0s must be below healthy_deadline 5m0s",
    ),
    (
        {f"{TG}.Update": {"HealthyDeadline": 15 * MINUTE}},
        "service",
        G,
        "healthy_deadline 15m0s must be below progress_deadline 10m0s",
    ),
    ({f"{TG}.Update": {"HealthyDeadline": 0}}, "service", G, "healthy_deadline 0s must be above 0"),
    ({f"{TG}.Update": {"ProgressDeadline": -SECOND}}, "service", G, "progress_deadline -1s is negative"),
    ({f"{TG}.Update": {"Stagger": 0}}, "service", G, "stagger 0s must be above 0"),
    ({f"{TG}.Update": {"MaxParallel": 2}}, "batch", G, "batch jobs may not have an update block"),
    ({"Update": {"MaxParallel": 2}}, "sysbatch", G, "sysbatch jobs may not have an update block"),
    # Migrate
    ({f"{TG}.Migrate": {"MaxParallel": 2}}, "batch", G, "batch jobs may not have a migrate block"),
    ({f"{TG}.Migrate": {"HealthCheck": "manual"}}, "service", G, "migrate health check 'manual' is unknown"),
    ({f"{TG}.Migrate": {"MaxParallel": -1}}, "service", G, "migrate max_parallel -1 is negative"),
    (
        {f"{TG}.Migrate": {"MinHealthyTime": HOUR}},
        "service",
        G,
        "migrate min_healthy_time 1h0m0s is above healthy_deadline 5m0s",
    ),
    # Disconnect
    ({f"{TG}.Disconnect": {"Reconcile": "newest"}}, "service", G, "disconnect reconcile 'newest' is unknown"),
    ({f"{TG}.Disconnect": {"LostAfter": -SECOND}}, "service", G, "disconnect lost_after -1s is negative"),
    (
        {f"{TG}.Disconnect": {"LostAfter": MINUTE, "StopOnClientAfter": MINUTE}},
        "service",
        G,
        "lost_after or stop_on_client_after, not both",
    ),
    ({f"{TG}.Disconnect": {"StopOnClientAfter": MINUTE}}, "system", G, "only for service and batch jobs"),
    (
        {f"{TG}.Disconnect": {"StopOnClientAfter": -SECOND}},
        "service",
        G,
        "stop_on_client_after -1s is negative",
    ),
    # Logs
    ({f"{TASK}.LogConfig": {"MaxFiles": 0}}, "service", T, "max_files must be at least 1, not 0"),
    ({f"{TASK}.LogConfig": {"MaxFileSizeMB": -1}}, "service", T, "max_file_size must be at least 1 MB"),
    (
        {f"{TASK}.LogConfig": {"MaxFiles": 10, "MaxFileSizeMB": 30}},
        "service",
        T,
        "log storage (300 MB) must be less than the ephemeral disk (300 MB)",
    ),
]


@pytest.mark.parametrize(
    ("changes", "job_type", "place", "words"),
    [pytest.param(*case, id=f"{case[1]}: {case[3]}") for case in CASES],
)
def test_rule(changes: dict[str, Any], job_type: str, place: str, words: str) -> None:
    problems = problems_of(changes, job_type)
    matching = [p for p in problems if words in p]
    assert matching, f"no problem mentions {words!r}: {problems}"
    assert all(p.startswith(place) for p in matching), matching


def test_message_names_the_place() -> None:
    doc = job_doc()
    put(doc, f"{TG}.ReschedulePolicy", {"Delay": SECOND})
    assert "Task group 'web': reschedule delay 1s is below the minimum of 5s" in validate_job(
        canonicalize(Job.model_validate(doc))
    )


@pytest.mark.parametrize(
    ("job", "words"),
    [
        # Not canonicalized: the name is not filled from the ID, the group lacks its policies.
        (Job(id="x", name="", task_groups=[]), "Job: name is empty"),
        (Job(id="x", name="x", type=""), "Job: type is missing"),
        (Job(id="x", namespace="", region=""), "Job: namespace is empty"),
        (Job(id="x", namespace="", region=""), "Job: region is empty"),
        (Job(id="x", datacenters=[]), "Job: no datacenters given"),
        (
            Job(id="x", name="x", task_groups=[TaskGroup(name="g", tasks=[Task(name="t", driver="d")])]),
            "Task group 'g': has no restart policy",
        ),
        (
            Job(id="x", name="x", task_groups=[TaskGroup(name="g", tasks=[Task(name="t", driver="d")])]),
            "Task group 'g': has no reschedule policy",
        ),
        (
            Job(id="x", name="x", task_groups=[TaskGroup(name="g", tasks=[Task(name="t", driver="d")])]),
            "Task group 'g': has no ephemeral disk",
        ),
    ],
)
def test_raw_job_rules(job: Job, words: str) -> None:
    assert any(p.startswith(words) for p in validate_job(job)), validate_job(job)


def test_every_problem_at_once() -> None:
    doc = job_doc()
    put(doc, "Priority", 500)
    put(doc, f"{TG}.Count", -2)
    put(doc, f"{TASK}.Driver", "")
    put(doc, f"{RES}.MemoryMB", 1)
    put(doc, f"{TG}.ReschedulePolicy", {"Delay": SECOND, "DelayFunction": "random"})
    put(doc, f"{TG}.Spreads", [{"Attribute": "", "Weight": 0}])
    problems = validate_job(canonicalize(Job.model_validate(doc)))
    expected = [
        "Job: priority 500",
        f"{G}: count -2",
        f"{T}: no driver",
        f"{T}: memory 1 MB",
        f"{G}: reschedule delay 1s",
        f"{G}: reschedule delay function 'random'",
        f"{G}, spread 1 (no attribute): attribute is empty",
        f"{G}, spread 1 (no attribute): weight 0",
    ]
    for prefix in expected:
        assert any(p.startswith(prefix) for p in problems), (prefix, problems)
    assert len(problems) >= len(expected)


def test_problems_from_several_groups_and_tasks_are_all_reported() -> None:
    doc = job_doc()
    doc["TaskGroups"] = [
        {"Name": name, "Tasks": [{"Name": "a", "Driver": ""}, {"Name": "b", "Driver": ""}]}
        for name in ("x", "y")
    ]
    problems = validate_job(canonicalize(Job.model_validate(doc)))
    assert sorted(p for p in problems if "no driver" in p) == [
        f"Task group '{g}', task '{t}': no driver given" for g in ("x", "y") for t in ("a", "b")
    ]


def test_unknown_type_is_reported_once() -> None:
    assert problems_of({"Type": "cron"}) == [
        "Job: unknown job type 'cron' (expected one of service, batch, system, sysbatch)"
    ]


def test_disabled_reschedule_skips_other_checks() -> None:
    assert (
        reschedule_problems(ReschedulePolicy(attempts=0, unlimited=False, delay=0, delay_function="")) == []
    )


def test_reschedule_fit_check_handles_huge_attempts_quickly() -> None:
    rp = ReschedulePolicy(
        attempts=10**12, interval=HOUR, delay=5 * SECOND, delay_function="fibonacci", max_delay=MINUTE
    )
    assert any("allows only" in p for p in reschedule_problems(rp))
    rp = rp.model_copy(update={"delay_function": "exponential"})
    assert any("allows only" in p for p in reschedule_problems(rp))


def test_resources_default_is_valid() -> None:
    job = canonicalize(Job(id="x", task_groups=[TaskGroup(name="g", tasks=[Task(name="t", driver="d")])]))
    assert job.task_groups[0].tasks[0].resources == Resources()
    assert validate_job(job) == []


# ---------------------------------------------------------------------------------------------
# format_duration


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (999, "999ns"),
        (MICROSECOND, "1µs"),
        (1500, "1.5µs"),
        (MILLISECOND, "1ms"),
        (250 * MILLISECOND, "250ms"),
        (SECOND, "1s"),
        (1500 * MILLISECOND, "1.5s"),
        (5 * SECOND, "5s"),
        (90 * SECOND, "1m30s"),
        (MINUTE, "1m0s"),
        (HOUR, "1h0m0s"),
        (24 * HOUR, "24h0m0s"),
        (HOUR + MINUTE + SECOND + 1, "1h1m1.000000001s"),
        (-5 * SECOND, "-5s"),
        (-90 * SECOND, "-1m30s"),
    ],
)
def test_format_duration(ns: int, text: str) -> None:
    assert format_duration(ns) == text
