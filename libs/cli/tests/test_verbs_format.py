"""The verbs' layout helpers, table-driven: columns and `Key = value` blocks as Nomad's CLI
prints them, times and durations, placement failures explained, a plan's group updates and
exit code, Go durations, the cluster's health read from the metrics' JSON, and jobspec files
(JSON, or HCL through drover.jobspec)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drover.cli.allocs import alloc_addresses, task_time
from drover.cli.common import Problem
from drover.cli.jobrun import group_updates, load_job, plan_changes, plan_text
from drover.cli.jobs import allocs_table, job_list_table, summary_table
from drover.cli.main import take_token
from drover.cli.monitor import deployment_table
from drover.cli.nodes import node_table, parse_duration
from drover.cli.output import ago, date, duration, failed_placements, kv, short, table
from drover.cli.system import health, health_text

S = 1_000_000_000
NOW = 1_800_000_000.0  # seconds


def test_table_pads_columns_two_spaces_apart_and_strips_the_end() -> None:
    assert table(["ID", "Status"], [["a", "running"], ["abcdef", None], ["b", True]]).splitlines() == [
        "ID      Status",
        "a       running",
        "abcdef",
        "b       true",
    ]


def test_kv_aligns_on_the_equals_sign() -> None:
    assert kv([("ID", "web"), ("Submit Date", ""), ("Periodic", False)]).splitlines() == [
        "ID          = web",
        "Submit Date =",
        "Periodic    = false",
    ]


@pytest.mark.parametrize(
    ("fn", "arg", "expected"),
    [
        (short, "0123456789abcdef", "01234567"),
        (date, 0, ""),
        (date, 1_800_000_000 * S, "2027-01-15T08:00:00Z"),
        (duration, 0, "0s"),
        (duration, 59.6, "1m0s"),
        (duration, 3725, "1h2m5s"),
        (lambda ns: ago(ns, NOW), int((NOW - 125) * S), "2m5s ago"),
        (lambda ns: ago(ns, NOW), int((NOW - 2 * 86400) * S), "2027-01-13T08:00:00Z"),
        (task_time, "2026-11-26T07:54:35.411690298Z", "2026-11-26T07:54:35Z"),
        (task_time, "0001-01-01T00:00:00Z", "N/A"),
        (task_time, 1_800_000_000 * S, "2027-01-15T08:00:00Z"),
        (parse_duration, "1h30m", 5400 * S),
        (parse_duration, "500ms", S // 2),
        (parse_duration, "1.5s", 3 * S // 2),
    ],
)
def test_ids_times_and_durations(fn: Any, arg: Any, expected: Any) -> None:
    assert fn(arg) == expected


@pytest.mark.parametrize("text", ["", "10", "1x", "h", "1h-"])
def test_a_bad_duration_is_a_problem(text: str) -> None:
    with pytest.raises(Problem):
        parse_duration(text)


METRIC = {
    "NodesEvaluated": 3,
    "NodesAvailable": {"dc1": 3, "dc2": 0},
    "ClassFiltered": {},
    "ConstraintFiltered": {"${attr.kernel.name} = windows": 1},
    "NodesExhausted": 2,
    "ClassExhausted": {"": 2},
    "DimensionExhausted": {"memory": 2},
    "QuotaExhausted": [],
    "CoalescedFailures": 2,
}


@pytest.mark.parametrize(
    ("failed", "expected"),
    [
        (
            {"web": METRIC},
            [
                'Task Group "web" (failed to place 3 allocations):',
                '  * No nodes are available in datacenter "dc2"',
                '  * Constraint "${attr.kernel.name} = windows": 1 nodes excluded by filter',
                "  * Resources exhausted on 2 nodes",
                '  * Dimension "memory" exhausted on 2 nodes',
            ],
        ),
        (
            {
                "b": {"NodesEvaluated": 0, "NodesAvailable": {}},
                "a": {"NodesEvaluated": 1, "NodesExhausted": 1},
            },
            [
                'Task Group "a" (failed to place 1 allocation):',
                "  * Resources exhausted on 1 nodes",
                'Task Group "b" (failed to place 1 allocation):',
                "  * No nodes were eligible for evaluation",
            ],
        ),
    ],
)
def test_failed_placements_say_why(failed: dict[str, Any], expected: list[str]) -> None:
    assert failed_placements(failed) == expected


@pytest.mark.parametrize(
    ("updates", "text", "changes"),
    [
        ({"Ignore": 3}, "3 ignore", False),
        ({"InPlaceUpdate": 2, "Ignore": 1}, "2 in-place update, 1 ignore", False),
        ({"Place": 2, "InPlaceUpdate": 1}, "2 create, 1 in-place update", True),
        ({"Stop": 1}, "1 destroy", True),
        ({"DestructiveUpdate": 2, "Canary": 1}, "2 create/destroy update, 1 canary", True),
        ({"Migrate": 1}, "1 migrate", True),
    ],
)
def test_plan_group_updates_and_exit_code(updates: dict[str, int], text: str, changes: bool) -> None:
    assert group_updates(updates) == text
    plan = {"Annotations": {"DesiredTGUpdates": {"web": updates}}}
    assert plan_changes(plan) is changes


def test_plan_text_without_a_diff_lists_the_groups_and_the_check_index_hint() -> None:
    plan = {
        "Annotations": {"DesiredTGUpdates": {"web": {"Place": 1}}},
        "FailedTGAllocs": None,
        "JobModifyIndex": 42,
        "Diff": None,
    }
    text = plan_text(plan, "web", "web.json")
    assert text.startswith(
        'Job: "web"\nTask Group: "web" (1 create)\n\nScheduler dry-run:\n'
        "- All tasks successfully allocated.\n\nJob Modify Index: 42\n"
    )
    assert "drover job run -check-index 42 web.json" in text


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_list_tables_have_nomads_columns() -> None:
    job = {
        "ID": "web",
        "Type": "service",
        "Priority": 50,
        "Status": "running",
        "SubmitTime": 1_800_000_000 * S,
    }
    assert job_list_table([job]).splitlines() == [
        "ID   Type     Priority  Status   Submit Date",
        "web  service  50        running  2027-01-15T08:00:00Z",
    ]
    node = {
        "ID": "0123456789",
        "Datacenter": "dc1",
        "Name": "n1",
        "SchedulingEligibility": "eligible",
        "Status": "ready",
        "Drain": False,
    }
    assert _rows(node_table([node])) == [
        ["ID", "Node", "Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"],
        ["01234567", "default", "dc1", "n1", "<none>", "false", "eligible", "ready"],
    ]
    alloc = {
        "ID": "a" * 36,
        "NodeID": "n" * 36,
        "TaskGroup": "web",
        "JobVersion": 2,
        "DesiredStatus": "run",
        "ClientStatus": "running",
        "CreateTime": int((NOW - 60) * S),
        "ModifyTime": int((NOW - 5) * S),
    }
    assert allocs_table([alloc], now=NOW).splitlines()[1].split("  ")[0] == "a" * 8
    assert "1m0s ago  5s ago" in allocs_table([alloc], now=NOW)
    summary = {"Summary": {"web": {"Running": 3, "Lost": 1}}}
    assert _rows(summary_table(summary))[1] == ["web", "0", "0", "3", "0", "0", "1", "0"]


def test_the_deployment_table_adds_canary_columns_only_with_canaries() -> None:
    group = {
        "DesiredTotal": 3,
        "PlacedAllocs": 3,
        "HealthyAllocs": 2,
        "UnhealthyAllocs": 0,
        "RequireProgressBy": 0,
    }
    plain = deployment_table({"Status": "successful", "TaskGroups": {"web": group}})
    assert plain.splitlines() == [
        "Task Group  Desired  Placed  Healthy  Unhealthy  Progress Deadline",
        "web         3        3       2        0          N/A",
    ]
    canary = {**group, "DesiredCanaries": 1, "PlacedCanaries": ["x"], "Promoted": False}
    text = deployment_table({"Status": "running", "TaskGroups": {"web": canary}}, now=NOW)
    assert text.splitlines()[0].split("  ")[:4] == ["Task Group", "Promoted", "Desired", "Canaries"]


def _gauge(name: str, value: int, **labels: str) -> dict[str, Any]:
    return {"Name": name, "Value": value, "Labels": labels}


def test_health_reads_positions_lags_and_leaders_from_the_metrics() -> None:
    metrics = {
        "Gauges": [
            _gauge("drover.log.position", 120),
            _gauge("drover.nodes", 2, status="ready"),
            _gauge("drover.nodes", 1, status="down"),
            _gauge("drover.evals", 4, status="complete", triggered_by="a"),
            _gauge("drover.evals", 1, status="complete", triggered_by="b"),
            _gauge("drover.relay.position", 119, service="relay", instance="7"),
            _gauge("drover.relay.lag", 1, service="relay", instance="7"),
            _gauge("drover.replica.position", 100, service="planner", instance="9"),
            _gauge("drover.replica.lag", 20, service="planner", instance="9"),
            _gauge("drover.broker.queue", 3, service="broker", instance="8", lane="small", state="ready"),
        ]
    }
    h = health("127.0.0.1:4646", metrics)
    assert h["Index"] == 120 and h["Nodes"] == {"ready": 2, "down": 1} and h["Evaluations"] == {"complete": 5}
    assert [(s["Service"], s["Role"], s["Position"], s["Lag"]) for s in h["Services"]] == [
        ("broker", "replica", None, None),
        ("planner", "leader", 100, 20),
        ("relay", "relay", 119, 1),
    ]
    text = health_text(h)
    assert "Missing   = worker, leader, gc" in text
    assert "planner  9         leader   100       20" in text
    assert "Nodes       = 1 down, 2 ready" in text
    assert "Servers   = ok" in text
    down = health_text(health("127.0.0.1:4646", {}, "NATS unreachable: nats: no servers available"))
    assert "Servers   = NATS unreachable: nats: no servers available" in down
    assert "Missing   = relay, broker, worker, planner, leader, gc" in down


def test_load_job_reads_json_with_or_without_its_wrapper(tmp_path: Path) -> None:
    wrapped, bare, broken = tmp_path / "a.json", tmp_path / "b.nomad", tmp_path / "c.json"
    wrapped.write_text('{"Job": {"ID": "a"}}')
    bare.write_text('  {"ID": "b"}')
    broken.write_text('{"Job":\n  {"ID": }}')
    assert load_job(str(wrapped)) == {"ID": "a"} and load_job(str(bare)) == {"ID": "b"}
    with pytest.raises(Problem, match=r"c.json:2: not valid JSON"):
        load_job(str(broken))
    with pytest.raises(Problem, match="can't read"):
        load_job(str(tmp_path / "missing.json"))


def test_hcl_jobspecs_are_parsed_with_the_variables_var_files_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, varfile = tmp_path / "web.nomad.hcl", tmp_path / "prod.vars.hcl"
    spec.write_text(
        'variable "image" { type = string }\n'
        'variable "region" { default = "us" }\n'
        'variable "dcs" { default = ["dc1"] }\n'
        'job "web" {\n  region = var.region\n  datacenters = var.dcs\n'
        '  group "g" {\n    task "t" {\n      driver = "docker"\n'
        "      config { image = var.image }\n    }\n  }\n}\n"
    )
    varfile.write_text('image = "redis:6"\n')
    monkeypatch.setenv("NOMAD_VAR_region", "eu")
    job = load_job(str(spec), [], [str(varfile)])
    assert job["ID"] == "web" and job["Region"] == "eu" and job["Datacenters"] == ["dc1"]
    assert job["TaskGroups"][0]["Tasks"][0]["Config"] == {"image": "redis:6"}
    job = load_job(str(spec), ["image=redis:7"], [str(varfile)])  # -var over -var-file
    assert job["TaskGroups"][0]["Tasks"][0]["Config"] == {"image": "redis:7"}
    with pytest.raises(Problem, match="can't read the variables file"):
        load_job(str(spec), [], [str(tmp_path / "missing.hcl")])
    spec.write_text('job "web" {\n  group "g" {\n    count = \n')
    with pytest.raises(Problem, match=r"(?s)the jobspec is invalid:\n.*web.nomad.hcl:\d+"):
        load_job(str(spec))
    with pytest.raises(Problem, match="-var takes key=value"):
        load_job(str(spec), ["novalue"])


def test_alloc_addresses_as_nomad_lists_them() -> None:
    shared = {
        "Networks": [
            {"DynamicPorts": [{"Label": "http"}], "ReservedPorts": [{"Label": "admin", "Value": 9900}]}
        ],
        "Ports": [
            {"Label": "admin", "Value": 9900, "To": 0, "HostIP": "10.0.0.1"},
            {"Label": "http", "Value": 23456, "To": 8080, "HostIP": "10.0.0.1"},
        ],
    }
    assert alloc_addresses({"AllocatedResources": {"Shared": shared}}).splitlines() == [
        "Allocation Addresses:",
        "Label  Dynamic  Address",
        "admin  no       10.0.0.1:9900",
        "http   yes      10.0.0.1:23456 -> 8080",
    ]
    assert alloc_addresses({"AllocatedResources": None}) == ""


def test_hcl_jobspecs_see_this_machines_files_and_randomness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As Nomad's CLI: the filesystem functions read the machine's files, a relative path from
    # the jobspec's directory; bcrypt and uuidv4 take the machine's randomness.
    (tmp_path / "jobs" / "conf").mkdir(parents=True)
    (tmp_path / "jobs" / "conf" / "app.conf").write_text("port = 80\n")
    (tmp_path / "jobs" / "conf" / "b.conf").write_bytes(b"\xff")
    spec = tmp_path / "jobs" / "web.nomad.hcl"
    spec.write_text(
        'job "web" {\n  meta {\n    conf = file("conf/app.conf")\n    b = filebase64("conf/b.conf")\n'
        '    there = fileexists("conf/app.conf")\n    all = join(",", fileset("conf", "*.conf"))\n'
        '    here = abspath("x")\n    home = pathexpand("~/y")\n    id = uuidv4()\n  }\n'
        '  group "g" {\n    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "/home/ops")
    meta = load_job(str(spec))["Meta"]
    assert {k: meta[k] for k in ("conf", "b", "there", "all")} == {
        "conf": "port = 80\n",
        "b": "/w==",
        "there": "true",
        "all": "app.conf,b.conf",
    }
    assert meta["here"] == str(tmp_path / "x") and meta["home"] == "/home/ops/y"
    assert len(meta["id"]) == 36 and meta["id"] != load_job(str(spec))["Meta"]["id"]


@pytest.mark.parametrize(
    ("args", "rest", "token"),
    [
        (["job", "status"], ["job", "status"], None),
        (["job", "status", "-token", "t1"], ["job", "status"], "t1"),
        (["-token=t2", "job", "status", "web"], ["job", "status", "web"], "t2"),
        (["--token", "t3", "acl", "token", "self", "--token=t4"], ["acl", "token", "self"], "t4"),
        (["job", "run", "--", "-token", "x"], ["job", "run", "--", "-token", "x"], None),
        (
            ["job", "status", "-token"],
            ["job", "status", "-token"],
            None,
        ),  # no value: left to the verb to refuse
    ],
)
def test_the_global_token_flag_is_taken_wherever_it_is(
    args: list[str], rest: list[str], token: str | None
) -> None:
    assert take_token(args) == (rest, token)
