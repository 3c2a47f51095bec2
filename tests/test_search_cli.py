"""The CLI's search against a real API process: `-filter` on the list verbs Nomad gives it
(job status, node status, eval list, deployment list, namespace list, var list) sent as the
API's ?filter=, a bad expression one readable error; `drover status <id>` finds what an ID or
a prefix of one names through /v1/search and shows it with its own verb, listing every match
when it names several."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from drover.cli.main import app
from drover.runtime.embedded import wait_for_port

from .cluster import Cluster, node_json


@pytest.fixture(scope="module")
def api(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    """An API process (no scheduler: the jobs' evals stay pending), with three jobs and two nodes."""
    c = Cluster(module_database_url, nats_url, tmp_path_factory.mktemp("search-cli"))
    try:
        c.spawn("api")
        wait_for_port(c.port, 60, proc=c.procs["api"][0])
        for n, dc in (("alpha-1", "dc1"), ("beta-1", "dc2")):
            c.put("/v1/drover/node/register", {"Node": node_json(n, dc=dc)})
        for job_id, owner in (("web", "ops"), ("web-api", "dev"), ("batchy", "ops")):
            c.put("/v1/jobs", job(job_id, owner))
        c.put("/v1/namespace/prod", {"Name": "prod", "Description": "production"})
        c.put("/v1/var/app/config", {"Path": "app/config", "Items": {"k": "v"}})
        yield c
    finally:
        c.stop()


def job(job_id: str, owner: str) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "mock", "Resources": {"CPU": 10, "MemoryMB": 16}}
    return {"Job": {"ID": job_id, "Datacenters": ["dc1"], "Meta": {"owner": owner},
                    "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [task]}]}}  # fmt: skip


def drover(api: Cluster, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "-address", f"http://127.0.0.1:{api.port}"])


def test_list_verbs_take_a_filter(api: Cluster) -> None:
    r = drover(api, "job", "status", "-filter", 'Meta.owner == "ops"')
    assert r.exit_code == 0, r.output
    listed = [line.split()[0] for line in r.output.splitlines()[1:]]
    assert listed == ["batchy", "web"]
    r = drover(api, "node", "status", "-filter", "Datacenter == dc2")
    assert r.exit_code == 0 and "beta-1" in r.output and "alpha-1" not in r.output, r.output
    (web_eval,) = api.get("/v1/job/web/evaluations")
    r = drover(api, "eval", "list", "-filter", 'JobID == "web"', "-verbose")
    assert r.exit_code == 0 and web_eval["ID"] in r.output and r.output.count("job-register") == 1, r.output
    r = drover(api, "namespace", "list", "-filter", "Description == production")
    assert r.exit_code == 0 and "prod" in r.output and "default" not in r.output, r.output
    r = drover(api, "var", "list", "-filter", 'Path matches "^app/"')
    assert r.exit_code == 0 and "app/config" in r.output, r.output
    r = drover(api, "var", "list", "-filter", 'Path matches "^db/"')
    assert r.exit_code == 0 and "app/config" not in r.output, r.output
    r = drover(api, "deployment", "list", "-filter", "Status == running")
    assert r.exit_code == 0 and "No deployments found" in r.output, r.output

    r = drover(api, "job", "status", "-filter", "Meta.owner ==")
    assert r.exit_code == 1 and "failed to read filter expression: column 14: expected a value" in r.output


def test_status_finds_what_an_id_prefix_names_through_search(api: Cluster) -> None:
    r = drover(api, "status", "batch")
    assert r.exit_code == 0 and "ID            = batchy" in r.output, r.output
    # An ID whole wins over the longer ones it starts.
    r = drover(api, "status", "web")
    assert r.exit_code == 0 and "ID            = web\n" in r.output, r.output
    (web_eval,) = api.get("/v1/job/web/evaluations")
    r = drover(api, "status", web_eval["ID"][:8])
    assert r.exit_code == 0 and "TriggeredBy" in r.output and "web" in r.output, r.output
    r = drover(api, "status", "alpha")
    assert r.exit_code == 0 and "alpha-1" in r.output and "Drain" in r.output, r.output
    r = drover(api, "status", "pro")
    assert r.exit_code == 0 and "production" in r.output, r.output
    r = drover(api, "status", "web-", "-json")
    assert r.exit_code == 0 and '"ID": "web-api"' in r.output, r.output

    r = drover(api, "status", "we")
    assert r.exit_code == 1 and 'Prefix "we" matched multiple objects:\njob: web\njob: web-api' in r.output
    r = drover(api, "status", "zzz")
    assert r.exit_code == 1 and 'No matches for "zzz"' in r.output, r.output
