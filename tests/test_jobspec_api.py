"""`POST /v1/jobs/parse` and `POST /v1/validate/job` against a running cluster, through httpx
and python-nomad (`jobs.parse`, `validate.validate_job`): a jobspec comes back as the Job's
JSON (canonicalized when asked), a bad one as a 400 naming the file's line, a job is validated
in Nomad's JobValidateResponse form; neither writes to the log. The parsed job registers and
its allocs are placed; a job with networks reads back with them through python-nomad."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import nomad  # type: ignore[import-untyped]
import pytest
from nomad.api import exceptions as nomad_errors  # type: ignore[import-untyped]

from drover.runtime.store import EventStore

from .cluster import Cluster, node_json

CORPUS = Path(__file__).parent / "fixtures" / "jobspecs"

SPEC = """
variable "count" {
  type    = number
  default = 1
}

job "hello" {
  datacenters = ["dc1"]
  group "g" {
    count = var.count
    task "t" {
      driver = "mock"
      config { run_for = "${var.count * 10}s" }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
"""


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


def test_parse_and_validate(cluster: Cluster, store: EventStore) -> None:
    http = cluster.http
    client = nomad.Nomad(address=f"http://127.0.0.1:{cluster.port}", timeout=30)
    before = store.last_position()

    # The corpus' jobs come back as their expected JSON, through python-nomad too.
    service = (CORPUS / "service.nomad.hcl").read_text()
    assert client.jobs.parse(service) == json.loads((CORPUS / "service.json").read_text())
    canonical = client.jobs.parse(service, canonicalize=True)
    assert canonical["Namespace"] == "default"
    assert canonical["TaskGroups"][0]["RestartPolicy"]["Mode"] == "fail"
    assert canonical["TaskGroups"][0]["Tasks"][0]["KillTimeout"] == 30_000_000_000
    # What Drover's model does not keep is not lost by canonicalizing.
    assert canonical["TaskGroups"][0]["Services"][0]["PortLabel"] == "http"
    assert canonical["TaskGroups"][0]["Tasks"][0]["Templates"][0]["DestPath"] == "local/app.conf"

    # Variables is read as a var file.
    r = http.post("/v1/jobs/parse", json={"JobHCL": SPEC, "Variables": "count = 3\n"})
    assert r.status_code == 200, r.text
    assert r.json()["TaskGroups"][0]["Count"] == 3
    assert r.json()["TaskGroups"][0]["Tasks"][0]["Config"] == {"run_for": "30s"}
    # uuidv4() and bcrypt() take the server's randomness, as Nomad's do.
    random = SPEC.replace('datacenters = ["dc1"]', 'datacenters = ["dc1"]\n  meta { id = uuidv4() }')
    r = http.post("/v1/jobs/parse", json={"JobHCL": random})
    assert r.status_code == 200 and len(r.json()["Meta"]["id"]) == 36, r.text

    # A bad jobspec or var file: 400 with every problem, by line; file() is refused, as Nomad's
    # API refuses the filesystem functions.
    bad = SPEC.replace("count = var.count", 'count = "many"').replace('driver = "mock"', 'driver = file("x")')
    r = http.post("/v1/jobs/parse", json={"JobHCL": bad})
    assert r.status_code == 400
    assert "input.hcl:10: job[hello].group[g].count: a number is required, not the string 'many'" in r.text
    assert (
        "input.hcl:12: job[hello].group[g].task[t].driver: file(): filesystem functions are disabled here"
        in r.text
    )
    r = http.post("/v1/jobs/parse", json={"JobHCL": SPEC, "Variables": "count = \n"})
    assert r.status_code == 400 and "variables.hcl:1: syntax:" in r.text, r.text
    assert http.post("/v1/jobs/parse", json={"JobHCL": ""}).text == "Job spec is empty"
    assert http.post("/v1/jobs/parse", json={"JobHCL": 7}).status_code == 400
    with pytest.raises(nomad_errors.BadRequestNomadException):
        client.jobs.parse('job "x" {')

    # Validate: Nomad's response form, every problem listed.
    job = client.jobs.parse(SPEC)
    ok = client.validate.validate_job({"Job": job}).json()
    assert ok == {"DriverConfigValidated": True, "ValidationErrors": None, "Error": "", "Warnings": ""}
    broken = {**job, "Priority": 500, "TaskGroups": [{**job["TaskGroups"][0], "Count": -1}]}
    out = client.validate.validate_job({"Job": broken}).json()
    assert len(out["ValidationErrors"]) == 2, out
    assert any("priority 500" in e for e in out["ValidationErrors"]), out
    assert out["Error"].startswith("2 errors occurred:\n\t* ")
    assert http.post("/v1/validate/job", json={}).text == "Job must be specified"
    assert http.post("/v1/validate/job", json={"Job": {"Priority": "high"}}).status_code == 400

    # Parsing and validating wrote nothing; the parsed job registers and runs.
    assert store.last_position() == before
    cluster.put("/v1/drover/node/register", {"Node": node_json("n1")})
    cluster.put("/v1/jobs", {"Job": client.jobs.parse(SPEC.replace("default = 1", "default = 2"))})
    cluster.wait(lambda: len(cluster.get("/v1/job/hello/allocations")) == 2, timeout=30)

    # A job with networks registers through python-nomad and reads back with them.
    shop = client.jobs.parse((CORPUS / "shop.nomad.hcl").read_text())
    client.job.register_job("shop", {"Job": shop})
    (network,) = client.job.get_job("shop")["TaskGroups"][0]["Networks"]
    assert network["Mode"] == "host"
    assert [(p["Label"], p["To"]) for p in network["DynamicPorts"]] == [("http", 8080), ("metrics", 0)]
    assert [(p["Label"], p["Value"], p["HostNetwork"]) for p in network["ReservedPorts"]] == [
        ("admin", 9091, "default")
    ]
