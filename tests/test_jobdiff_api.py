"""Job diffs through the API of a running cluster: `/v1/job/:id/plan` with Diff answers Nomad's
Diff of the planned job from the registered one, annotated with the plan's decisions (a count
change, an image change, a meta key added, a constraint removed), python-nomad's plan_job
shows it, `drover.cli.diffview` prints it, and `/v1/job/:id/versions?diffs=true` diffs each
version from the one before. One cluster for the module: nothing here changes the planned job."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import nomad  # type: ignore[import-untyped]
import pytest

from drover.cli.diffview import format_diff
from drover.runtime.bus import connect
from drover.runtime.embedded import EmbeddedNats, EmbeddedPostgres

from .cluster import Cluster, nats_credentials, node_json
from .conftest import fresh_database, reset_jetstream


def web(
    count: int = 3, image: str = "redis:7", meta: dict[str, str] | None = None, constrained: bool = True
) -> dict[str, Any]:
    job: dict[str, Any] = {
        "ID": "web",
        "Datacenters": ["dc1"],
        "Meta": meta or {},
        "TaskGroups": [{"Name": "cache", "Count": count, "Tasks": [
            {"Name": "redis", "Driver": "docker", "Config": {"image": image, "args": ["--appendonly", "yes"]},
             "Resources": {"CPU": 100, "MemoryMB": 64}}]}],
    }  # fmt: skip
    if constrained:
        job["Constraints"] = [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}]
    return {"Job": job}


async def _reset(nats_url: str) -> None:
    nc = await connect(nats_url, "test", nats_credentials())
    await reset_jetstream(nc)
    await nc.close()


@pytest.fixture(scope="module")
def cluster(
    postgres: EmbeddedPostgres | str,
    nats_server: EmbeddedNats | str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    """A cluster (no leader: the nodes are registered by hand and never heartbeat) running job
    `web`'s three allocs."""
    nats_url = nats_server if isinstance(nats_server, str) else nats_server.url
    asyncio.run(_reset(nats_url))
    with fresh_database(postgres) as url:
        c = Cluster(url, nats_url, tmp_path_factory.mktemp("jobdiff"), workers=1, leaders=0, gcs=0).start()
        try:
            for i in range(2):
                node = node_json(f"n{i}")
                node["Drivers"]["docker"] = {"Detected": True, "Healthy": True}
                c.put("/v1/drover/node/register", {"Node": node})
            c.put("/v1/jobs", web())
            c.wait(lambda: len(c.get("/v1/job/web/allocations")) == 3, timeout=30)
            yield c
        finally:
            c.stop()


def plan(c: Cluster, body: dict[str, Any], diff: bool = True) -> dict[str, Any]:
    answer: dict[str, Any] = c.put("/v1/job/web/plan", {**body, "Diff": diff})
    return answer


def _one(items: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    found = [i for i in items or () if i["Name"] == name]
    assert len(found) == 1, f"{name!r} not once in {items!r}"
    return found[0]


def _changes(d: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(f["Type"], f["Name"], f["Old"], f["New"]) for f in d["Fields"] or () if f["Type"] != "None"]


def test_plan_diffs_show_each_change_annotated_by_the_plan(cluster: Cluster) -> None:
    same = plan(cluster, web())
    assert same["Diff"]["Type"] == "None" and same["Diff"]["TaskGroups"][0]["Updates"] == {"ignore": 3}
    assert plan(cluster, web(count=5), diff=False)["Diff"] is None

    count = plan(cluster, web(count=5))["Diff"]
    group = _one(count["TaskGroups"], "cache")
    assert count["Type"] == "Edited" and group["Type"] == "Edited"
    assert _one(group["Fields"], "Count") == {"Type": "Edited", "Name": "Count", "Old": "3", "New": "5",
                                              "Annotations": ["forces create"]}  # fmt: skip
    # As in Nomad, the running allocs take the new version in place.
    assert group["Updates"] == {"create": 2, "in-place update": 3}

    image = plan(cluster, web(image="redis:8"))["Diff"]
    group = _one(image["TaskGroups"], "cache")
    task = _one(group["Tasks"], "redis")
    config = _one(task["Objects"], "Config")
    assert _changes(config) == [("Edited", "image", "redis:7", "redis:8")]
    assert {f["Name"] for f in config["Fields"] if f["Type"] == "None"} == {"args[0]", "args[1]"}
    assert task["Annotations"] == ["forces create/destroy update"]
    # The update block's max_parallel (1) lets one alloc be replaced at a time.
    assert group["Updates"] == {"create/destroy update": 1, "ignore": 2}

    meta = plan(cluster, web(meta={"owner": "ops"}))["Diff"]
    assert meta["Type"] == "Edited" and _changes(meta) == [("Added", "Meta[owner]", "", "ops")]

    unconstrained = plan(cluster, web(constrained=False))["Diff"]
    (constraint,) = unconstrained["Objects"]
    assert (constraint["Type"], constraint["Name"]) == ("Deleted", "Constraint")
    assert _changes(constraint) == [("Deleted", "LTarget", "${attr.kernel.name}", ""), ("Deleted", "Operand", "=", ""),
                                    ("Deleted", "RTarget", "linux", "")]  # fmt: skip


def test_python_nomad_plan_job_shows_the_diff_and_the_cli_prints_it(cluster: Cluster) -> None:
    client = nomad.Nomad(address=f"http://127.0.0.1:{cluster.port}", timeout=30)
    answer = client.job.plan_job("web", web(image="redis:8", meta={"owner": "ops"}), diff=True)
    assert answer["Diff"]["ID"] == "web" and answer["Diff"]["Type"] == "Edited"
    assert (
        format_diff(answer["Diff"])
        == """\
+/- Job: "web"
+   Meta[owner]: "ops"
+/- Task Group: "cache" (1 create/destroy update, 2 ignore)
  +/- Task: "redis" (forces create/destroy update)
    +/- Config {
          args[0]: "--appendonly"
          args[1]: "yes"
      +/- image:   "redis:7" => "redis:8"
        }

"""
    )
    # Without Diff, python-nomad gets none.
    assert client.job.plan_job("web", web(count=4))["Diff"] is None


def test_versions_with_diffs_diff_each_version_from_the_one_before(cluster: Cluster) -> None:
    hist = copy.deepcopy(web())
    hist["Job"]["ID"] = "hist"
    cluster.put("/v1/jobs", hist)
    assert cluster.get("/v1/job/hist/versions", diffs="true")["Diffs"] is None  # one version: nothing to diff
    hist["Job"]["TaskGroups"][0]["Count"] = 4
    cluster.put("/v1/jobs", hist)
    hist["Job"]["TaskGroups"][0]["Tasks"][0]["Config"]["image"] = "redis:8"
    cluster.put("/v1/jobs", hist)

    answer = cluster.get("/v1/job/hist/versions", diffs="true")
    assert [v["Version"] for v in answer["Versions"]] == [2, 1, 0]
    newest, older = answer["Diffs"]
    config = _one(_one(newest["TaskGroups"][0]["Tasks"], "redis")["Objects"], "Config")
    assert (
        _changes(config) == [("Edited", "image", "redis:7", "redis:8")]
        and newest["TaskGroups"][0]["Fields"] is None
    )
    assert _changes(older["TaskGroups"][0]) == [("Edited", "Count", "3", "4")]
    assert cluster.get("/v1/job/hist/versions")["Diffs"] is None

    against = cluster.get("/v1/job/hist/versions", diffs="true", diff_version=0)["Diffs"]
    assert [d["Type"] for d in against] == ["Edited", "Edited", "None"]
    r = cluster.http.get("/v1/job/hist/versions", params={"diffs": "true", "diff_version": 9})
    assert r.status_code == 404 and "version 9 not found" in r.text
    for bad in ({"diffs": "maybe"}, {"diffs": "true", "diff_version": "x"}):
        assert cluster.http.get("/v1/job/hist/versions", params=bad).status_code == 400, bad
    assert cluster.http.put("/v1/job/web/plan", json={**web(), "Diff": "yes"}).status_code == 400


def ports(static: int) -> dict[str, Any]:
    """Job `ports`: one group with a dynamic and a static port."""
    return {"Job": {"ID": "ports", "Datacenters": ["dc1"], "TaskGroups": [{
        "Name": "api", "Count": 1,
        "Networks": [{"DynamicPorts": [{"Label": "http", "To": 8080}], "ReservedPorts": [{"Label": "admin", "Value": static}]}],
        "Tasks": [{"Name": "api", "Driver": "docker", "Config": {"image": "api:1"}, "Resources": {"CPU": 100, "MemoryMB": 64}}],
    }]}}  # fmt: skip


def test_a_plan_changing_a_static_port_shows_the_network_as_nomad_does(cluster: Cluster) -> None:
    node = node_json("n2")
    node["Drivers"]["docker"] = {"Detected": True, "Healthy": True}
    node["NodeResources"]["Networks"] = [
        {"Mode": "host", "Device": "eth0", "IP": "10.0.0.2", "CIDR": "10.0.0.2/32"}
    ]
    node["NodeResources"]["NodeNetworks"] = [
        {
            "Mode": "host",
            "Device": "eth0",
            "Addresses": [{"Family": "ipv4", "Alias": "default", "Address": "10.0.0.2"}],
        }
    ]
    cluster.put("/v1/drover/node/register", {"Node": node})
    cluster.put("/v1/jobs", ports(9090))
    cluster.wait(lambda: len(cluster.get("/v1/job/ports/allocations")) == 1, timeout=30)

    answer = cluster.put("/v1/job/ports/plan", {**ports(9091), "Diff": True})
    group = _one(answer["Diff"]["TaskGroups"], "api")
    # A changed network is a new one and the old one gone, each with its ports as objects.
    added, deleted = (n for n in group["Objects"] if n["Name"] == "Network")
    assert (added["Type"], deleted["Type"]) == ("Added", "Deleted")
    assert ("Added", "Value", "", "9091") in _changes(_one(added["Objects"], "Static Port"))
    assert ("Deleted", "Value", "9090", "") in _changes(_one(deleted["Objects"], "Static Port"))
    assert "Value" not in {f["Name"] for f in _one(added["Objects"], "Dynamic Port")["Fields"]}
    # Ports are set up before the task starts: the alloc is replaced, not updated in place.
    assert group["Updates"] == {"create/destroy update": 1}
    printed = format_diff(answer["Diff"])
    assert "+ Static Port {" in printed and '+ Value:           "9091"' in printed, printed
    assert '- Value:           "9090"' in printed, printed

    cluster.put("/v1/jobs", ports(9091))
    newest = cluster.get("/v1/job/ports/versions", diffs="true")["Diffs"][0]
    networks = _one(newest["TaskGroups"], "api")["Objects"]
    assert [(n["Name"], n["Type"]) for n in networks] == [("Network", "Added"), ("Network", "Deleted")]
