"""Namespaces as Nomad's clients use them, against a running API: `drover namespace
list|status|apply|delete` (each in a subprocess) and the verbs' `-namespace` / NOMAD_NAMESPACE,
and python-nomad's `namespace` and `namespaces` calls with a client set to a namespace."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import nomad  # type: ignore[import-untyped]
import pytest

from .cluster import SERVICES, Cluster, job_json
from .prefork import run_drover


@pytest.fixture
def api(database_url: str, nats_url: str, tmp_path: Path) -> Iterator[Cluster]:
    """The API alone on a database of its own: namespaces need nothing else."""
    c = Cluster(database_url, nats_url, tmp_path)
    c.counts = {svc: int(svc == "api") for svc in SERVICES}
    c.start()
    yield c
    c.stop()


def drover(c: Cluster, *args: str, code: int = 0, **env: str) -> str:
    """`drover args...` against the API (NOMAD_ADDR); its output, asserting its exit code."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DROVER_ADDR", "NOMAD_ADDR", "DROVER_NAMESPACE", "NOMAD_NAMESPACE")
    }
    p = run_drover(list(args), {**base, "NOMAD_ADDR": str(c.http.base_url), **env}, 60)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert p.returncode == code, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout + p.stderr


SPEC = """
name        = "prod"
description = "Production workloads"
meta {
  owner = "ops"
}
capabilities {
  enabled_task_drivers  = ["mock", "docker"]
  disabled_task_drivers = ["raw_exec"]
}
"""


def test_the_namespace_verbs_and_the_namespace_flag(api: Cluster, tmp_path: Path) -> None:
    c = api
    out = drover(c, "namespace", "list")
    assert out.splitlines() == ["Name     Description", "default  Default shared namespace"]
    spec = tmp_path / "prod.hcl"
    spec.write_text(SPEC)
    assert drover(c, "namespace", "apply", str(spec)).strip() == 'Successfully applied namespace "prod"!'
    prod = c.get("/v1/namespace/prod")
    assert (prod["Description"], prod["Meta"]) == ("Production workloads", {"owner": "ops"})
    assert prod["Capabilities"]["EnabledTaskDrivers"] == ["mock", "docker"]
    # By name: -description changes that alone.
    drover(c, "namespace", "apply", "-description", "Prod", "prod")
    prod = c.get("/v1/namespace/prod")
    assert (prod["Description"], prod["Meta"]) == ("Prod", {"owner": "ops"})
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps({"Name": "dev", "Description": "Development"}))
    drover(c, "namespace", "apply", "-json", str(dev))
    status = drover(c, "namespace", "status", "pro")  # a unique prefix
    assert "Name                   = prod" in status and "Enabled Drivers        = mock,docker" in status
    assert "Disabled Drivers       = raw_exec" in status and "owner = ops" in status.split("Metadata")[1]
    assert json.loads(drover(c, "namespace", "status", "-json", "dev"))["Description"] == "Development"
    assert "Prefix matched multiple namespaces" in drover(c, "namespace", "status", "d", code=1)
    listed = drover(c, "namespace", "list", "-json")
    assert [n["Name"] for n in json.loads(listed)] == ["default", "dev", "prod"]

    # The verbs work in the namespace of -namespace or NOMAD_NAMESPACE.
    job = tmp_path / "web.json"
    job.write_text(json.dumps(job_json("web", 1)["Job"]))
    drover(c, "job", "run", "-detach", "-namespace", "prod", str(job))
    assert c.get("/v1/job/web", namespace="prod")["Namespace"] == "prod"
    assert "No running jobs" in drover(c, "job", "status")
    assert "web" in drover(c, "job", "status", NOMAD_NAMESPACE="prod")
    every = drover(c, "job", "status", "-namespace", "*").splitlines()
    assert every[0].split() == ["ID", "Namespace", "Type", "Priority", "Status", "Submit", "Date"]
    assert every[1].split()[:2] == ["web", "prod"]
    # Found in every namespace, a job is then read in its own.
    assert "Namespace     = prod" in drover(c, "job", "status", "-namespace", "*", "web")
    assert "prod" in drover(c, "eval", "list", "-namespace", "prod")
    drover(c, "var", "put", "app/cfg", "k=v", NOMAD_NAMESPACE="prod")
    assert drover(c, "var", "get", "-item", "k", "-namespace", "prod", "app/cfg").strip() == "v"
    assert "app/cfg" not in drover(c, "var", "list")
    # A namespace with a live job and a variable is not deleted, in Nomad's words.
    out = drover(c, "namespace", "delete", "prod", code=1)
    assert 'namespace "prod" has non-terminal jobs in regions: [global]' in out
    assert 'namespace "prod" has variables associated with it in regions: [global]' in out
    drover(c, "job", "stop", "-purge", "-detach", "-yes", "-namespace", "prod", "web")
    drover(c, "var", "purge", "-namespace", "prod", "app/cfg")
    assert drover(c, "namespace", "delete", "prod").strip() == 'Successfully deleted namespace "prod"!'
    assert "can not delete default namespace" in drover(c, "namespace", "delete", "default", code=1)
    assert [n["Name"] for n in c.get("/v1/namespaces")] == ["default", "dev"]
    # Replayed into fresh projections, the catalogue is the same, `default` included.
    listed = drover(c, "namespace", "list", "-json")
    assert "rebuilt projections" in drover(c, "admin", "rebuild", DROVER_DATABASE_URL=c.database_url)
    assert drover(c, "namespace", "list", "-json") == listed


def test_python_nomad_namespace_calls(api: Cluster) -> None:
    address = f"http://127.0.0.1:{api.port}"
    n = nomad.Nomad(address=address, timeout=30)
    assert [ns["Name"] for ns in n.namespaces.get_namespaces()] == ["default"]
    assert "default" in n.namespaces and len(n.namespaces) == 1
    n.namespace.create_namespace({"Name": "prod", "Description": "Production"})
    assert n.namespace.get_namespace("prod")["Description"] == "Production"
    assert "prod" in n.namespace and "nope" not in n.namespace
    n.namespace.update_namespace("prod", {"Name": "prod", "Description": "Prod", "Meta": {"team": "a"}})
    got = n.namespace.get_namespace("prod")
    assert (got["Description"], got["Meta"]) == ("Prod", {"team": "a"})
    assert [ns["Name"] for ns in n.namespaces.get_namespaces(prefix="pr")] == ["prod"]
    assert n.namespaces["prod"]["Description"] == "Prod"
    # A client set to a namespace registers and reads there.
    in_prod = nomad.Nomad(address=address, timeout=30, namespace="prod")
    in_prod.job.register_job("web", job_json("web", 1))
    assert in_prod.job.get_job("web")["Namespace"] == "prod"
    assert [j["ID"] for j in in_prod.jobs.get_jobs()] == ["web"]
    assert n.jobs.get_jobs() == []
    assert [j["Namespace"] for j in n.jobs.get_jobs(namespace="*")] == ["prod"]
    with pytest.raises(nomad.api.exceptions.BadRequestNomadException) as refused:
        n.namespace.delete_namespace("prod")
    assert "non-terminal jobs" in refused.value.nomad_resp.text
    in_prod.job.deregister_job("web", purge=True)
    n.namespace.delete_namespace("prod")
    assert "prod" not in n.namespace
    with pytest.raises(nomad.api.exceptions.BadRequestNomadException):
        in_prod.job.register_job("web", job_json("web", 1))
