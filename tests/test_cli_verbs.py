"""The `drover` verbs end to end: each command in a subprocess (its output not a terminal)
against one real cluster shared by the module, with stand-in clients reporting allocs running
and healthy. `job run` follows a JSON job to its successful deployment and exits 0, and runs an
HCL jobspec with its variables; `job plan` prints the diff of a count and an image change; an
impossible job exits 2 saying why; `job plan` exits 1 on a change and 0 on none; node drain,
eligibility and `job stop -purge` act; each table has Nomad's columns; every read's -json
parses; errors are one readable line and exit 1."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.runtime.embedded import free_port

from .cluster import Cluster
from .prefork import run_drover
from .standin import StandInClients

NODES = ["alpha-1", "alpha-2", "beta-1"]


@pytest.fixture(scope="module")
def cluster(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    """One cluster, on a database of its own, for the module's tests."""
    c = Cluster(module_database_url, nats_url, tmp_path_factory.mktemp("cli-verbs")).start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def clients(cluster: Cluster) -> Iterator[StandInClients]:
    s = StandInClients(str(cluster.http.base_url), NODES)
    yield s
    s.close()


def drover(c: Cluster, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """`drover args...` with the API's address in NOMAD_ADDR (DROVER_ADDR unset): Nomad's
    variable is honoured."""
    base = {k: v for k, v in os.environ.items() if k not in ("DROVER_ADDR", "NOMAD_ADDR")}
    p = run_drover(list(args), {**base, "NOMAD_ADDR": str(c.http.base_url), **env}, timeout)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def ok(c: Cluster, *args: str, code: int = 0) -> str:
    p = drover(c, *args)
    assert p.returncode == code, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def job_file(tmp: Path, job_id: str, count: int, *, mem: int = 64, deployment: bool = True) -> Path:
    """A JSON jobspec; with `deployment` False, an update block of max_parallel 0 (no deployment)."""
    job: dict[str, Any] = {
        "ID": job_id,
        "Datacenters": ["dc1"],
        "Update": {"MaxParallel": 1 if deployment else 0, "MinHealthyTime": 0},
        "TaskGroups": [
            {
                "Name": "web",
                "Count": count,
                "Tasks": [{"Name": "web", "Driver": "mock", "Resources": {"CPU": 100, "MemoryMB": mem}}],
            }
        ],
    }
    path = tmp / f"{job_id}-{count}-{mem}.json"
    path.write_text(json.dumps({"Job": job}))
    return path


def header(text: str, first: str) -> list[str]:
    """The column names of the table whose header line starts with `first`."""
    line = next(x for x in text.splitlines() if x.startswith(first))
    return re.split(r"\s{2,}", line.strip())


def running(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [
        a
        for a in c.get(f"/v1/job/{job_id}/allocations")
        if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"
    ]


def test_job_run_follows_the_deployment_and_the_reads_show_it(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    out = ok(c, "job", "run", str(job_file(tmp_path, "web", 3)))
    assert re.search(r'^==> \S+: Monitoring evaluation "[0-9a-f]{8}"$', out, re.M), out
    assert (
        len(
            re.findall(r'Allocation "[0-9a-f]{8}" created: node "(alpha-1|alpha-2|beta-1)", group "web"', out)
        )
        == 3
    )
    assert re.search(r'Deployment "[0-9a-f]{8}" successful', out), out
    assert len(running(c, "web")) == 3
    job = c.get("/v1/job/web")
    deployment = c.get("/v1/job/web/deployment")
    alloc = c.get("/v1/job/web/allocations")[0]
    (evaluation,) = [e for e in c.get("/v1/job/web/evaluations") if e["TriggeredBy"] == "job-register"]

    listing = ok(c, "job", "status")
    assert header(listing, "ID") == ["ID", "Type", "Priority", "Status", "Submit Date"]
    assert re.search(r"^web\s+service\s+50\s+running\s+\d{4}-", listing, re.M), listing
    detail = ok(c, "job", "status", "we")  # a prefix
    assert re.search(r"^ID\s+= web$", detail, re.M) and re.search(r"^Status\s+= running$", detail, re.M)
    assert header(detail, "Task Group  Queued") == [
        "Task Group",
        "Queued",
        "Starting",
        "Running",
        "Failed",
        "Complete",
        "Lost",
        "Unknown",
    ]
    assert re.search(r"^web\s+0\s+0\s+3\s+0\s+0\s+0\s+0$", detail, re.M), detail
    assert header(detail, "Task Group  Desired") == [
        "Task Group",
        "Desired",
        "Placed",
        "Healthy",
        "Unhealthy",
        "Progress Deadline",
    ]
    assert header(detail, "ID        Node ID") == [
        "ID",
        "Node ID",
        "Task Group",
        "Version",
        "Desired",
        "Status",
        "Created",
        "Modified",
    ]
    assert f"Latest Deployment\nID          = {deployment['ID'][:8]}\nStatus      = successful" in detail

    evals = ok(c, "eval", "list")
    assert header(evals, "ID") == [
        "ID",
        "Priority",
        "Triggered By",
        "Job ID",
        "Namespace",
        "Node ID",
        "Status",
        "Placement Failures",
    ]
    assert re.search(
        rf"^{evaluation['ID'][:8]}\s+50\s+job-register\s+web\s+default\s+<none>\s+complete\s+false$",
        evals,
        re.M,
    )
    assert re.search(r"^TriggeredBy\s+= job-register$", ok(c, "eval", "status", evaluation["ID"][:6]), re.M)
    status = ok(c, "alloc", "status", alloc["ID"][:6])
    assert re.search(rf"^Name\s+= {re.escape(alloc['Name'])}$", status, re.M)
    assert re.search(r"^Deployment Health\s+= healthy$", status, re.M), status
    deployments = ok(c, "deployment", "list")
    assert header(deployments, "ID") == ["ID", "Job ID", "Job Version", "Status", "Description"]
    assert re.search(
        rf"^{deployment['ID'][:8]}\s+web\s+0\s+successful\s+Deployment completed successfully$",
        deployments,
        re.M,
    )
    assert re.search(
        r"^web\s+3\s+3\s+3\s+0\s+N/A$", ok(c, "deployment", "status", deployment["ID"][:8]), re.M
    )
    nodes = ok(c, "node", "status")
    assert header(nodes, "ID") == ["ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"]
    assert re.search(r"^alpha-1\s+default\s+dc1\s+alpha-1\s+<none>\s+false\s+eligible\s+ready$", nodes, re.M)
    assert re.search(r"^Drain\s+= false$", ok(c, "node", "status", "alpha-1"), re.M)
    # Each service publishes its metrics every 2 s: all are there once each has.
    health = c.wait(lambda: "Missing   = none" in (h := ok(c, "status")) and h, timeout=15)
    assert header(health, "Service ") == ["Service", "Instance", "Role", "Position", "Lag"]
    assert re.search(r"^planner\s+\d+\s+leader\s+\d+\s+\d+$", health, re.M), health
    assert re.search(r"^worker\s+\d+\s+replica\s+\d+\s+\d+$", health, re.M), health

    # -json on every read: the API's objects.
    reads: list[tuple[list[str], Any]] = [
        (["job", "status"], lambda d: [j["ID"] for j in d] == ["web"]),
        (["job", "status", "web"], lambda d: d["Job"]["JobModifyIndex"] == job["JobModifyIndex"]),
        (["job", "inspect", "web"], lambda d: d["Job"]["ID"] == "web"),
        (["job", "history", "web"], lambda d: [v["Version"] for v in d] == [0]),
        (["alloc", "status", alloc["ID"]], lambda d: d["ID"] == alloc["ID"]),
        (["eval", "list"], lambda d: evaluation["ID"] in {e["ID"] for e in d}),
        (["eval", "status", evaluation["ID"]], lambda d: d["ID"] == evaluation["ID"]),
        (["node", "status"], lambda d: sorted(n["ID"] for n in d) == sorted(NODES)),
        (["node", "status", "beta-1"], lambda d: d["ID"] == "beta-1"),
        (["deployment", "list"], lambda d: [x["ID"] for x in d] == [deployment["ID"]]),
        (["deployment", "status", deployment["ID"]], lambda d: d["Status"] == "successful"),
        (["status"], lambda d: {"planner", "worker", "broker"} <= {s["Service"] for s in d["Services"]}),
    ]
    for args, check in reads:
        doc = json.loads(ok(c, *args, "-json"))
        assert check(doc), (args, doc)

    # A count change: the allocs updated in place join the new deployment, which succeeds.
    out = ok(c, "job", "run", str(job_file(tmp_path, "web", 4)))
    assert len(re.findall(r'Allocation "[0-9a-f]{8}" modified', out)) == 3, out
    assert re.search(r'Deployment "[0-9a-f]{8}" successful', out), out
    assert re.search(r"^    web\s+4\s+4\s+4\s+0\s+N/A$", out, re.M), out


def test_job_plan_exits_1_on_a_change_and_run_check_index_holds(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    # Jobs without a deployment: `job run` ends with the eval.
    ok(c, "job", "run", "-detach", str(job_file(tmp_path, "plan", 1, deployment=False)))
    c.wait(lambda: len(running(c, "plan")) == 1, timeout=30)
    index = c.get("/v1/job/plan")["JobModifyIndex"]
    same = ok(c, "job", "plan", str(job_file(tmp_path, "plan", 1, deployment=False)), code=0)
    assert 'Task Group: "web" (1 ignore)' in same and "- All tasks successfully allocated." in same
    bigger = job_file(tmp_path, "plan", 3, deployment=False)
    out = ok(c, "job", "plan", str(bigger), code=1)
    assert 'Task Group: "web" (2 create, 1 in-place update)' in out, out
    assert f"drover job run -check-index {index} {bigger}" in out
    assert len(c.get("/v1/job/plan/allocations")) == 1  # nothing committed
    too_big = ok(c, "job", "plan", str(job_file(tmp_path, "plan", 1, mem=10**6, deployment=False)), code=1)
    assert (
        "- WARNING: Failed to place all allocations." in too_big and 'Dimension "memory" exhausted' in too_big
    )
    p = drover(c, "job", "run", "-check-index", str(index + 1), str(bigger))
    assert p.returncode == 1 and f"conflicting job modify index: {index}" in p.stderr, p.stderr
    assert c.get("/v1/job/plan")["Version"] == 0
    ok(c, "job", "run", "-check-index", str(index), str(bigger))
    c.wait(lambda: len(running(c, "plan")) == 3, timeout=30)
    assert drover(c, "job", "plan", str(tmp_path / "missing.json")).returncode == 255


def test_an_impossible_job_exits_2_with_the_reasons(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    p = drover(c, "job", "run", str(job_file(tmp_path, "huge", 2, mem=10**6)))
    assert p.returncode == 2, p.stdout + p.stderr
    assert (
        'but failed to place all allocations:\n    Task Group "web" (failed to place 2 allocations):'
        in p.stdout
    )
    assert (
        '      * Resources exhausted on 3 nodes\n      * Dimension "memory" exhausted on 3 nodes' in p.stdout
    )
    assert re.search(r'Evaluation "[0-9a-f]{8}" waiting for additional capacity', p.stdout), p.stdout
    status = ok(c, "job", "status", "huge")
    assert 'Placement Failure\nTask Group "web" (failed to place 2 allocations):' in status, status
    blocked = [e for e in c.get("/v1/job/huge/evaluations") if e["Status"] == "blocked"]
    assert re.search(
        r"^Placement Failures\s+= true$", ok(c, "eval", "status", blocked[0]["PreviousEval"]), re.M
    )


def test_node_drain_eligibility_and_job_stop_purge(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    clients.register("gamma-1")
    ok(c, "job", "run", str(job_file(tmp_path, "drained", 4)))
    on = [a for a in running(c, "drained") if a["NodeID"] == "gamma-1"] or running(c, "drained")
    node = on[0]["NodeID"]
    refused = drover(c, "node", "drain", "-enable", node[:4])  # a prefix, not confirmed
    assert refused.returncode == 1 and "Pass -yes to confirm" in refused.stderr, refused.stderr
    out = ok(c, "node", "drain", "-enable", "-deadline", "1m", "-yes", node[:4])
    assert f'Node "{node}" drain strategy set' in out and f'Node "{node}" drain complete' in out, out
    n = c.get(f"/v1/node/{node}")
    assert n["DrainStrategy"] is None and n["SchedulingEligibility"] == "ineligible"
    c.wait(lambda: len(r := running(c, "drained")) == 4 and all(a["NodeID"] != node for a in r), timeout=30)
    assert "Eligibility = ineligible" in ok(c, "node", "status", node)
    out = ok(c, "node", "eligibility", "-enable", node)
    assert out.strip() == f'Node "{node}" scheduling eligibility set: eligible for scheduling'
    assert c.get(f"/v1/node/{node}")["SchedulingEligibility"] == "eligible"

    out = ok(c, "job", "stop", "-purge", "drained")
    assert re.search(r'Evaluation "[0-9a-f]{8}" finished with status "complete"', out), out
    assert c.http.get("/v1/job/drained").status_code == 404
    assert all(a["DesiredStatus"] == "stop" for a in c.get("/v1/allocations") if a["JobID"] == "drained")


def test_errors_are_one_readable_line_and_exit_1(cluster: Cluster) -> None:
    c = cluster
    p = drover(c, "job", "status", "ghost")
    assert (p.returncode, p.stderr.strip()) == (1, 'Error: No job with prefix or ID "ghost" found'), p.stderr
    p = drover(c, "alloc", "status", "0000")
    assert p.returncode == 1 and 'No allocation with prefix or ID "0000"' in p.stderr
    port = free_port()
    p = drover(c, "node", "status", "-address", f"http://127.0.0.1:{port}")  # -address wins over NOMAD_ADDR
    assert p.returncode == 1 and f"can't reach the API at http://127.0.0.1:{port}" in p.stderr, p.stderr
    p = drover(c, "job", "scale", "ghost", "web", "2", DROVER_ADDR=str(c.http.base_url))
    assert p.returncode == 1 and p.stderr.startswith("Error: "), p.stderr
    p = drover(c, "node", "drain", "alpha-1")
    assert p.returncode == 1 and "give one of -enable or -disable" in p.stderr


def test_canaries_promoted_and_the_other_acting_verbs(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    path = job_file(tmp_path, "canary", 2)
    doc = json.loads(path.read_text())
    doc["Job"]["Update"] = {"MaxParallel": 1, "Canary": 1, "MinHealthyTime": 0}
    path.write_text(json.dumps(doc))
    ok(c, "job", "run", str(path))
    doc["Job"]["TaskGroups"][0]["Tasks"][0]["Env"] = {"V": "2"}  # a destructive change: a canary
    path.write_text(json.dumps(doc))
    out = ok(c, "job", "run", "-detach", str(path))
    assert re.search(r"^Evaluation ID: \S+$", out, re.M), out
    d = c.wait(lambda: (x := c.get("/v1/job/canary/deployment"))["JobVersion"] == 1 and x, timeout=30)
    c.wait(lambda: c.get(f"/v1/deployment/{d['ID']}")["TaskGroups"]["web"]["HealthyAllocs"] == 1, timeout=30)
    status = ok(c, "deployment", "status", d["ID"][:8])
    assert header(status, "Task Group") == ["Task Group", "Promoted", "Desired", "Canaries", "Placed", "Healthy",
                                            "Unhealthy", "Progress Deadline"]  # fmt: skip
    assert re.search(r"^web\s+false\s+2\s+1\s+1\s+1\s+0\s+\d{4}-", status, re.M), status
    assert ok(c, "deployment", "pause", d["ID"][:8]).strip() == f'Deployment "{d["ID"][:8]}" paused'
    assert c.get(f"/v1/deployment/{d['ID']}")["Status"] == "paused"
    ok(c, "deployment", "resume", "-detach", d["ID"])
    assert c.get(f"/v1/deployment/{d['ID']}")["Status"] == "running"
    out = ok(c, "deployment", "promote", d["ID"])  # followed to its end
    assert f'Deployment "{d["ID"][:8]}" successful' in out, out
    history = ok(c, "job", "history", "canary")
    assert re.findall(r"^Version\s+= (\d+)$", history, re.M) == ["1", "0"], history
    assert json.loads(ok(c, "job", "inspect", "-version", "0", "canary"))["Job"]["Version"] == 0

    ok(c, "job", "revert", "-detach", "canary", "0")
    assert c.get("/v1/job/canary")["Version"] == 2
    # The revert is a destructive change: a canary deployment, waiting to be promoted. As in
    # Nomad, the job is not scaled while it is active; once it has failed, it is.
    d = c.wait(lambda: (x := c.get("/v1/job/canary/deployment"))["JobVersion"] == 2 and x, timeout=30)
    p = drover(c, "job", "scale", "-detach", "canary", "3")
    assert p.returncode == 1 and "job scaling blocked due to active deployment" in p.stderr, p.stderr
    assert c.get("/v1/job/canary")["Version"] == 2
    ok(c, "deployment", "fail", d["ID"])
    ok(c, "job", "scale", "-detach", "canary", "3")
    assert c.get("/v1/job/canary")["TaskGroups"][0]["Count"] == 3
    alloc = running(c, "canary")[0]
    out = ok(c, "alloc", "stop", "-detach", alloc["ID"][:8])
    assert c.get(f"/v1/allocation/{alloc['ID']}")["DesiredStatus"] == "stop", out
    ok(c, "system", "gc")


def test_init_writes_a_jobspec_that_validates(cluster: Cluster, tmp_path: Path) -> None:
    c = cluster
    spec = tmp_path / "example.nomad.json"
    assert ok(c, "job", "init", "-json", str(spec)).strip() == f"Example job file written to {spec}"
    assert ok(c, "job", "validate", str(spec)).strip() == "Job validation successful"
    p = drover(c, "job", "init", "-json", str(spec))
    assert p.returncode == 1 and "already exists" in p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"Job": {"ID": "bad", "TaskGroups": [{"Name": "g", "Count": -1, "Tasks": []}]}})
    )
    p = drover(c, "job", "validate", str(bad))
    assert p.returncode == 1 and "count -1 is negative" in p.stderr and "has no tasks" in p.stderr, p.stderr


HCL_JOB = """
variable "count" {
  type    = number
  default = 1
}
variable "image" { default = "redis:6" }
locals { name = "hcl-${var.image == "" ? "none" : "web"}" }

job "hcl" {
  datacenters = ["dc1"]
  update { max_parallel = 0 }
  group "web" {
    count = var.count
    task "web" {
      driver = "mock"
      config { run_for = "1h" }
      meta { image = var.image }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
  group "cache" {
    count = 0
    task "redis" {
      driver = "docker"
      config { image = var.image }
    }
  }
}
"""


def test_an_hcl_jobspec_runs_with_its_variables_and_plan_shows_the_diff(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    spec = tmp_path / "hcl.nomad.hcl"
    spec.write_text(HCL_JOB)
    varfile = tmp_path / "prod.vars.hcl"
    varfile.write_text("count = 2\n")
    out = ok(c, "job", "run", "-var-file", str(varfile), str(spec))
    assert len(running(c, "hcl")) == 2, out  # placed and running when `job run` returns
    job = c.get("/v1/job/hcl")
    assert [g["Count"] for g in job["TaskGroups"]] == [2, 0]
    assert job["TaskGroups"][0]["Tasks"][0]["Meta"] == {"image": "redis:6"}
    out = ok(c, "job", "plan", "-var", "count=3", "-var", "image=redis:7", str(spec), code=1)
    assert re.search(r'^\+/- Job: "hcl"$', out, re.M), out
    assert re.search(r'^\+/- Task Group: "web" \(1 create, 2 create/destroy update\)$', out, re.M), out
    assert re.search(r'^\s+\+/- Count:\s+"2" => "3"', out, re.M), out
    assert re.search(r'^\s+\+/- Meta\[image\]:\s+"redis:6" => "redis:7"$', out, re.M), out
    assert re.search(r'^\s+\+/- image:\s+"redis:6" => "redis:7"$', out, re.M), out  # the docker task's config
    assert "\n\nScheduler dry-run:" in out and "\n\n\nScheduler" not in out, out  # as Nomad lays it out
    assert len(running(c, "hcl")) == 2 and c.get("/v1/job/hcl")["Version"] == 0  # nothing committed
    p = drover(c, "job", "run", "-var", "count=two", str(spec))
    assert p.returncode == 1 and "count: invalid value for variable 'count'" in p.stderr, p.stderr
    spec.write_text(HCL_JOB.replace("count = var.count", "count = var.nope"))
    p = drover(c, "job", "run", str(spec))
    line = HCL_JOB.splitlines().index("    count = var.count") + 1
    assert p.returncode == 1 and f"{spec}:{line}:" in p.stderr and "nope" in p.stderr, p.stderr


UNKEPT_JOB = """
job "unkept" {
  datacenters = ["dc1"]
  group "web" {
    count = 1
    network {
      port "http" {}
      port "admin" { static = 9900 }
    }
    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
    }
    scaling {
      min = 1
      max = 5
    }
    task "web" {
      driver = "mock"
      config { run_for = "1h" }
      template {
        data        = "hello"
        destination = "local/hello.txt"
        vault_grace = "5s"
      }
    }
  }
}
"""

NOT_CARRIED = ('* group "web": task "web": template 0: VaultGrace is kept but not carried out',)


def test_blocks_drover_does_not_keep_are_named_in_warnings_never_dropped_in_silence(
    cluster: Cluster, clients: StandInClients, tmp_path: Path
) -> None:
    c = cluster
    spec = tmp_path / "unkept.nomad.hcl"
    spec.write_text(UNKEPT_JOB)
    job = c.http.post("/v1/jobs/parse", json={"JobHCL": UNKEPT_JOB}).json()
    # A key that is no Nomad field is dropped, and said to be; what is kept but not carried out
    # is said too.
    for path in ("/v1/validate/job", "/v1/job/unkept/plan", "/v1/jobs"):
        warnings = c.put(path, {"Job": {**job, "Colour": "blue"}})["Warnings"]
        assert warnings.startswith("2 warnings:\n\n* "), (path, warnings)
        assert "* Colour is not supported by Drover and was dropped" in warnings, warnings
        assert all(w in warnings for w in NOT_CARRIED), warnings
    # Every block is kept and read back.
    stored = c.get("/v1/job/unkept")
    group = stored["TaskGroups"][0]
    assert [p["Label"] for p in group["Networks"][0]["DynamicPorts"]] == ["http"]
    assert group["Networks"][0]["ReservedPorts"][0]["Value"] == 9900
    assert group["Services"][0]["Provider"] == "nomad" and group["Scaling"]["Max"] == 5
    assert group["Tasks"][0]["Templates"][0]["DestPath"] == "local/hello.txt"
    for verb, code in (("validate", 0), ("plan", 0), ("run", 0)):
        out = ok(c, "job", verb, *(["-detach"] if verb == "run" else []), str(spec), code=code)
        assert "Job Warnings:\n1 warning:" in out and all(w[2:] in out for w in NOT_CARRIED), (verb, out)
    # The job as read back drops nothing.
    assert "dropped" not in c.put("/v1/validate/job", {"Job": stored})["Warnings"]
