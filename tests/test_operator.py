"""Operator endpoints end to end, through the public API and python-nomad (the Python client
Nomad users have): alloc stop, node purge, job revert and stable, the scale status, the node
list's OS and resources, and the evaluation reads python-nomad makes. Every refusal leaves the
log where it was."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nomad  # type: ignore[import-untyped]
import pytest
from nomad.api import exceptions as nomad_errors  # type: ignore[import-untyped]

from drover.runtime.store import EventStore

from .cluster import Cluster, job_json, node_json
from .evals import NO_LINKS, links
from .test_drain import FakeClients


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path).start()
    yield c
    c.stop()


@pytest.fixture
def client(cluster: Cluster) -> nomad.Nomad:
    """python-nomad pointed at the cluster's API."""
    return nomad.Nomad(address=f"http://127.0.0.1:{cluster.port}", timeout=30)


@pytest.fixture
def running(cluster: Cluster) -> Iterator[FakeClients]:
    clients = FakeClients(str(cluster.http.base_url), delay=0)
    yield clients
    clients.close()


def _node(node_id: str, os_name: str = "ubuntu") -> dict[str, Any]:
    body = node_json(node_id)
    body["Attributes"]["os.name"] = os_name
    return {"Node": body}


def _live(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [a for a in c.get(f"/v1/job/{job_id}/allocations") if a["DesiredStatus"] == "run"]


def _event_at(store: EventStore, position: int) -> str:
    (rec,) = store.read(position - 1, 1)
    return rec.event.type


def _count(store: EventStore, event_type: str) -> int:
    return sum(1 for rec in store.read(0, 100_000) if rec.event.type == event_type)


def _quiet(store: EventStore, spell: float = 0.5) -> int:
    """The log's position once it has not moved for `spell` seconds."""
    last, since = store.last_position(), time.monotonic()
    while time.monotonic() - since < spell:
        time.sleep(0.05)
        now = store.last_position()
        if now != last:
            last, since = now, time.monotonic()
    return last


def _refused(store: EventStore, error: type[Exception], call: Any, needle: str = "") -> None:
    """`call` raises `error` (python-nomad's for the status) saying `needle`, and writes nothing
    (asked once the cluster is done with what it was doing)."""
    before = _quiet(store)
    with pytest.raises(error) as e:
        call()
    assert needle in e.value.nomad_resp.text, e.value.nomad_resp.text
    assert store.last_position() == before


def test_alloc_stop_replaces_the_alloc(
    cluster: Cluster, client: nomad.Nomad, running: FakeClients, store: EventStore
) -> None:
    c = cluster
    for n in ("n1", "n2"):
        c.put("/v1/drover/node/register", _node(n))
    c.put("/v1/jobs", job_json("web", 2))
    c.wait(lambda: len(live := _live(c, "web")) == 2 and all(a["ClientStatus"] == "running" for a in live))
    old = _live(c, "web")[0]

    stopped = client.allocation.stop_allocation(old["ID"])
    assert set(stopped) == {"EvalID", "Index"} and _event_at(store, stopped["Index"]) == "AllocsTransitioned"
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{stopped['EvalID']}"))["Status"] == "complete" and e
    )
    assert (evaluation["TriggeredBy"], evaluation["JobID"], evaluation["Type"]) == (
        "alloc-stop",
        "web",
        "service",
    )
    # Nothing left to place and nothing to wait for: no follow-up, no blocked eval.
    assert links(evaluation) == NO_LINKS

    gone = c.get(f"/v1/allocation/{old['ID']}")
    assert gone["DesiredStatus"] == "stop" and gone["DesiredTransition"]["Migrate"] is True
    replacement = c.get(f"/v1/allocation/{gone['NextAllocation']}")
    assert replacement["PreviousAllocation"] == old["ID"] and replacement["EvalID"] == evaluation["ID"]
    assert replacement["NodeID"] in ("n1", "n2") and replacement["Name"] == old["Name"]
    c.wait(lambda: len(live := _live(c, "web")) == 2 and all(a["ClientStatus"] == "running" for a in live))
    assert old["ID"] not in {a["ID"] for a in _live(c, "web")}

    # ?no_shutdown_delay is recorded in the transition; PUT works as POST does.
    other = _live(c, "web")[0]["ID"]
    r = c.http.put(f"/v1/allocation/{other}/stop", params={"no_shutdown_delay": "true"})
    assert r.status_code == 200, r.text
    transition = c.get(f"/v1/allocation/{other}")["DesiredTransition"]
    assert transition["Migrate"] is True and transition["NoShutdownDelay"] is True

    _refused(store, nomad_errors.URLNotFoundNomadException, lambda: client.allocation.stop_allocation("nope"))
    before = _quiet(store)
    assert (
        c.http.post(f"/v1/allocation/{other}/stop", params={"no_shutdown_delay": "maybe"}).status_code == 400
    )
    assert store.last_position() == before


def test_node_purge_deregisters_the_node_and_replaces_its_allocs(
    cluster: Cluster, client: nomad.Nomad, running: FakeClients, store: EventStore
) -> None:
    c = cluster
    c.put("/v1/drover/node/register", _node("n1"))
    c.put("/v1/jobs", job_json("web", 2))
    c.wait(lambda: len(live := _live(c, "web")) == 2 and all(a["ClientStatus"] == "running" for a in live))
    c.put("/v1/drover/node/register", _node("n2"))

    purged = client.node.purge_node("n1")
    assert _event_at(store, purged["NodeModifyIndex"]) == "NodeDeregistered" and len(purged["EvalIDs"]) == 1
    assert _event_at(store, purged["Index"]) == "EvalsUpserted"
    with pytest.raises(nomad_errors.URLNotFoundNomadException):
        client.node.get_node("n1")
    assert [n["ID"] for n in client.nodes.get_nodes()] == ["n2"]
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{purged['EvalIDs'][0]}"))["Status"] == "complete" and e
    )
    assert (evaluation["TriggeredBy"], evaluation["JobID"], evaluation["NodeID"]) == (
        "node-update",
        "web",
        "n1",
    )
    # The allocs on the node that is gone are lost and replaced on the other one.
    c.wait(
        lambda: (
            len(live := _live(c, "web")) == 2
            and all(a["NodeID"] == "n2" and a["ClientStatus"] == "running" for a in live)
        )
    )
    lost = [a for a in c.get("/v1/job/web/allocations") if a["NodeID"] == "n1"]
    assert len(lost) == 2 and all(a["ClientStatus"] == "lost" and a["NextAllocation"] for a in lost)

    _refused(store, nomad_errors.URLNotFoundNomadException, lambda: client.node.purge_node("n1"))
    # A node registered again after its purge is back.
    c.put("/v1/drover/node/register", _node("n1"))
    assert client.node.get_node("n1")["Status"] == "ready"


def test_revert_and_stable(
    cluster: Cluster, client: nomad.Nomad, running: FakeClients, store: EventStore
) -> None:
    c = cluster
    c.put("/v1/drover/node/register", _node("n1"))
    for count in (1, 3):
        client.job.register_job("web", job_json("web", count))
    assert client.job.get_job("web")["Version"] == 1

    marked = client.job.stable_job("web", 0, True)
    assert list(marked) == ["Index"] and _event_at(store, marked["Index"]) == "JobStabilityUpdated"
    stable = {v["Version"]: v["Stable"] for v in client.job.get_versions("web")["Versions"]}
    assert stable == {0: True, 1: False}
    assert client.job.get_job("web")["Stable"] is False
    client.job.stable_job("web", 0, True)  # so already: nothing written
    assert _count(store, "JobStabilityUpdated") == 1

    reverted = client.job.revert_job("web", 0, enforce_prior_version=1)
    assert set(reverted) >= {"EvalID", "EvalCreateIndex", "JobModifyIndex", "Index"}
    job = client.job.get_job("web")
    assert (job["Version"], job["TaskGroups"][0]["Count"], job["Stable"]) == (2, 1, False)
    assert job["JobModifyIndex"] == reverted["JobModifyIndex"]
    evaluation = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{reverted['EvalID']}"))["Status"] == "complete" and e
    )
    assert evaluation["TriggeredBy"] == "job-register"
    c.wait(lambda: len(_live(c, "web")) == 1)
    assert [v["Version"] for v in client.job.get_versions("web")["Versions"]] == [2, 1, 0]

    # The current version marked stable marks the job so; its JobModifyIndex stays.
    client.job.stable_job("web", 2, True)
    job = client.job.get_job("web")
    assert (
        job["Stable"] is True and job["Version"] == 2 and job["JobModifyIndex"] == reverted["JobModifyIndex"]
    )

    bad = nomad_errors.BadRequestNomadException
    _refused(store, bad, lambda: client.job.revert_job("web", 2), "can't revert to current version")
    _refused(store, bad, lambda: client.job.revert_job("web", 9), "at version 9 not found")
    _refused(store, bad, lambda: client.job.stable_job("web", 9, True), "at version 9 not found")
    _refused(
        store,
        nomad_errors.VariableConflict,  # python-nomad's name for a 409
        lambda: client.job.revert_job("web", 0, enforce_prior_version=1),
        "Current job has version 2; enforcing version 1",
    )
    _refused(store, nomad_errors.URLNotFoundNomadException, lambda: client.job.revert_job("nope", 0))
    _refused(store, nomad_errors.URLNotFoundNomadException, lambda: client.job.stable_job("nope", 0, True))
    for path, body, needle in (
        ("/v1/job/web/revert", {"JobID": "api", "JobVersion": 0}, "Job ID does not match"),
        (
            "/v1/job/web/revert",
            {"JobVersion": -1},
            "JobID must be specified\nJobVersion must not be negative",
        ),
        ("/v1/job/web/stable", {"JobID": "web", "JobVersion": "one", "Stable": "yes"}, "JobVersion"),
    ):
        before = _quiet(store)
        r = c.http.post(path, json=body)
        assert r.status_code == 400 and needle in r.text, r.text
        assert store.last_position() == before


def test_scale_status(cluster: Cluster, running: FakeClients, store: EventStore) -> None:
    c = cluster
    c.put("/v1/drover/node/register", _node("n1"))
    c.put("/v1/jobs", job_json("web", 2, rolling=False))
    c.wait(lambda: c.get("/v1/job/web/scale")["TaskGroups"]["web"]["Running"] == 2)
    status = c.get("/v1/job/web/scale")
    job = c.get("/v1/job/web")
    assert status == {
        "JobID": "web",
        "Namespace": "default",
        "JobCreateIndex": job["CreateIndex"],
        "JobModifyIndex": job["ModifyIndex"],
        "JobStopped": False,
        "TaskGroups": {
            "web": {"Desired": 2, "Placed": 2, "Running": 2, "Healthy": 0, "Unhealthy": 0, "Events": None}
        },
    }

    scaled = c.put(
        "/v1/job/web/scale",
        {"Count": 3, "Target": {"Group": "web"}, "Message": "more", "Meta": {"by": "ops"}},
    )
    assert scaled["EvalCreateIndex"] == scaled["Index"] > scaled["JobModifyIndex"] > 0
    c.wait(lambda: c.get("/v1/job/web/scale")["TaskGroups"]["web"]["Running"] == 3)
    # Without a count, only an event is recorded: no new version, no eval.
    version = c.get("/v1/job/web")["Version"]
    reported = c.put(
        "/v1/job/web/scale", {"Target": {"Group": "web"}, "Message": "no metrics", "Error": True}
    )
    assert reported["EvalID"] == "" and _event_at(store, reported["Index"]) == "ScalingEventRegistered"
    assert c.get("/v1/job/web")["Version"] == version
    group = c.get("/v1/job/web/scale")["TaskGroups"]["web"]
    assert (group["Desired"], group["Placed"], group["Running"]) == (3, 3, 3)
    newest, first = group["Events"]
    assert (newest["Message"], newest["Error"], newest["Count"], newest["EvalID"]) == (
        "no metrics",
        True,
        None,
        None,
    )
    assert (first["Count"], first["PreviousCount"], first["Message"], first["Meta"]) == (
        3,
        2,
        "more",
        {"by": "ops"},
    )
    assert first["EvalID"] == scaled["EvalID"] and first["Time"] > 0 and first["CreateIndex"] > 0

    before = _quiet(store)
    assert c.http.get("/v1/job/nope/scale").status_code == 404
    for body, needle in (
        (
            {"Count": 2, "Target": {"Group": "web"}, "Error": True},
            "Count must not be given when Error is true",
        ),
        ({"Count": 2, "Target": {"Group": "web", "Job": "api"}}, "Target.Job does not match"),
        ({"Count": 2}, "Target.Group is required"),
        ({"Count": 2, "Target": {"Group": "web"}, "JobModifyIndex": 1}, "JobModifyIndex 1"),
    ):
        r = c.http.put("/v1/job/web/scale", json=body)
        assert r.status_code in (400, 409) and needle in r.text, r.text
    assert store.last_position() == before
    # The job stopped: JobStopped.
    c.http.delete("/v1/job/web")
    assert c.get("/v1/job/web/scale")["JobStopped"] is True


def test_python_nomad_reads(cluster: Cluster, client: nomad.Nomad, store: EventStore) -> None:
    c = cluster
    c.put("/v1/drover/node/register", _node("n1", "ubuntu"))
    c.put("/v1/drover/node/register", _node("n2", "debian"))
    nodes = client.nodes.get_nodes(os=True)
    assert {n["ID"]: n["Attributes"] for n in nodes} == {
        "n1": {"os.name": "ubuntu"},
        "n2": {"os.name": "debian"},
    }
    assert all("Attributes" not in n and "NodeResources" not in n for n in client.nodes.get_nodes())
    with_resources = client.nodes.get_nodes(resources=True)
    assert (
        with_resources[0]["NodeResources"]["Cpu"]["CpuShares"] == 4000
        and "ReservedResources" in with_resources[0]
    )
    assert "n1" in client.nodes and len(client.nodes) == 2

    registered = client.jobs.register_job(job_json("web", 2))
    c.wait(lambda: client.evaluation.get_evaluation(registered["EvalID"])["Status"] == "complete")
    evals = client.evaluations.get_evaluations()
    assert registered["EvalID"] in client.evaluations and len(client.evaluations) == len(evals) == 1
    assert client.evaluations[registered["EvalID"]]["TriggeredBy"] == "job-register"
    assert (
        client.evaluations.get_evaluations(prefix=registered["EvalID"][:4])[0]["ID"] == registered["EvalID"]
    )
    allocs = client.evaluation.get_allocations(registered["EvalID"])
    assert len(allocs) == 2 and {a["ID"] for a in allocs} == {
        a["ID"] for a in client.job.get_allocations("web")
    }
    assert [e["ID"] for e in client.job.get_evaluations("web")] == [registered["EvalID"]]
    _refused(store, nomad_errors.URLNotFoundNomadException, lambda: client.evaluation.get_evaluation("nope"))

    # Nomad's eval count, by namespace and prefix.
    r = c.http.get("/v1/evaluations/count")
    assert r.status_code == 200 and r.json() == {"Count": 1} and int(r.headers["X-Nomad-Index"]) > 0
    assert c.get("/v1/evaluations/count", prefix=registered["EvalID"][:6]) == {"Count": 1}
    assert c.get("/v1/evaluations/count", namespace="other") == {"Count": 0}
    assert c.get("/v1/evaluations/count", namespace="*") == {"Count": 1}
    assert c.get("/v1/evaluations/count", filter='Status == "complete"') == {"Count": 1}
    assert c.get("/v1/evaluations/count", filter='Status != "complete"') == {"Count": 0}
    r = c.http.get("/v1/evaluations/count", params={"filter": "Status =="})
    assert r.status_code == 400 and "failed to read filter expression: column 10" in r.text

    # Search, as python-nomad calls it: IDs by prefix, names by fuzzy text.
    found = client.search.search("we", "jobs")
    assert found["Matches"] == {"jobs": ["web"]} and found["Truncations"] == {"jobs": False}
    every = client.search.search(registered["EvalID"][:8], "all")
    assert every["Matches"]["evals"] == [registered["EvalID"]] and every["Matches"]["nodes"] is None
    assert client.search.search("n", "nodes")["Matches"]["nodes"] == ["n1", "n2"]
    fuzzy = client.search.fuzzy_search("web", "all")["Matches"]
    assert fuzzy["jobs"] == [{"ID": "web", "Scope": ["default", "web"]}]
    assert [m["Scope"] for m in fuzzy["groups"]] == [["default", "web"]]
    assert {m["ID"] for m in fuzzy["allocs"]} == {a["Name"] for a in allocs}
    with pytest.raises(nomad_errors.BadRequestNomadException):
        client.search.fuzzy_search("w", "jobs")
    # ?filter= through python-nomad's requester.
    assert [
        j["ID"] for j in client.jobs.request(method="get", params={"filter": 'Name == "web"'}).json()
    ] == ["web"]
