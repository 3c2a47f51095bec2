"""ACLs with the API, the relay and the audit subscriber as processes on real NATS and PostgreSQL:
python-nomad's ACL calls with a token, the event stream checked topic by topic and closed when
its token is deleted or its policy changes, and a token's SecretID found nowhere: not in the
event log, not on the EVENTS stream, not in the audit trail, not in any service's log."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nomad
import psycopg
import pytest
from nats.js import JetStreamContext

from drover.runtime.bus import EVENTS_STREAM
from drover.runtime.embedded import wait_for_port
from drover.runtime.store import EventStore, libpq_url

from .cluster import Cluster, job_json


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    """The relay, the audit subscriber and an API with ACLs on; heartbeats every half second."""
    env = {
        "DROVER_ACL_ENABLED": "true",
        "DROVER_DATA_DIR": str(tmp_path / "data"),
        "DROVER_EVENT_HEARTBEAT": "0.5",
    }
    c = Cluster(database_url, nats_url, tmp_path, env=env)
    try:
        c.spawn("relay")
        c.spawn("audit")
        c.spawn("api")
        wait_for_port(c.port, 60, proc=c.procs["api"][0])
        yield c
    finally:
        c.stop()


def headers(secret: str) -> dict[str, str]:
    return {"X-Nomad-Token": secret}


def bootstrap(c: Cluster) -> str:
    r = c.http.post("/v1/acl/bootstrap")
    assert r.status_code == 200, r.text
    return str(r.json()["SecretID"])


def client_token(c: Cluster, root: str, name: str, rules: str) -> dict[str, Any]:
    r = c.http.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=headers(root))
    assert r.status_code == 200, r.text
    r = c.http.post(
        "/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=headers(root)
    )
    assert r.status_code == 200, r.text
    token: dict[str, Any] = r.json()
    return token


def test_python_nomads_acl_calls_with_a_token(cluster: Cluster) -> None:
    address = f"http://127.0.0.1:{cluster.port}"
    anonymous = nomad.Nomad(address=address, timeout=30)
    root = anonymous.acl.generate_bootstrap()
    assert root["Type"] == "management" and root["Name"] == "Bootstrap Token"
    with pytest.raises(nomad.api.exceptions.URLNotAuthorizedNomadException):
        anonymous.acl.get_tokens()
    n = nomad.Nomad(address=address, token=root["SecretID"], timeout=30)
    assert n.acl.get_self_token()["SecretID"] == root["SecretID"]
    # As python-nomad's own test does: a policy with empty rules, tokens naming a missing policy.
    assert n.acl.create_policy("my-policy", {"Name": "my-policy", "Description": "d", "Rules": ""}).ok
    n.acl.update_policy("my-policy", {"Name": "my-policy", "Description": "reads",
                                      "Rules": 'namespace "default" { policy = "read" }'})  # fmt: skip
    assert [p["Name"] for p in n.acl.get_policies()] == ["my-policy"]
    assert n.acl.get_policy("my-policy")["Description"] == "reads"
    created = n.acl.create_token({"Name": "Readonly token", "Type": "client", "Policies": ["readonly"]})
    assert created["Policies"] == ["readonly"] and created["SecretID"]
    assert {t["AccessorID"] for t in n.acl.get_tokens()} == {root["AccessorID"], created["AccessorID"]}
    assert n.acl.get_token(created["AccessorID"])["SecretID"] == created["SecretID"]
    updated = n.acl.update_token(created["AccessorID"], {"AccessorID": created["AccessorID"], "Name": "Updated",
                                                         "Type": "client", "Policies": ["my-policy"]})  # fmt: skip
    assert updated["Name"] == "Updated" and updated["SecretID"] == created["SecretID"]
    reader = nomad.Nomad(address=address, token=created["SecretID"], timeout=30)
    assert reader.jobs.get_jobs() == []
    with pytest.raises(nomad.api.exceptions.URLNotAuthorizedNomadException):
        reader.jobs.register_job(job_json("web", 1))
    assert n.acl.delete_token(created["AccessorID"])
    assert n.acl.delete_policy("my-policy")
    with pytest.raises(nomad.api.exceptions.URLNotAuthorizedNomadException):
        reader.jobs.get_jobs()


def open_stream(c: Cluster, secret: str | None, **params: Any) -> httpx.Response:
    """A stream's response, its body to be read (and closed) by the caller."""
    request = c.http.build_request(
        "GET", "/v1/event/stream", params=params, headers=headers(secret) if secret else {}
    )
    return c.http.send(request, stream=True)


def status(c: Cluster, secret: str | None, **params: Any) -> tuple[int, str]:
    r = open_stream(c, secret, **params)
    try:
        if r.status_code != 200:
            return r.status_code, r.read().decode()
        return 200, ""
    finally:
        r.close()


def test_the_event_stream_checks_each_topic(cluster: Cluster) -> None:
    c = cluster
    root = bootstrap(c)
    reader = client_token(c, root, "reader", 'namespace "default" { policy = "read" }')["SecretID"]
    c.http.put("/v1/jobs", json=job_json("web", 1), headers=headers(root))
    assert c.http.put("/v1/namespace/prod", json={"Name": "prod"}, headers=headers(root)).status_code == 200
    prod = job_json("api", 1)
    prod["Job"]["Namespace"] = "prod"
    assert c.http.put("/v1/jobs", json=prod, headers=headers(root)).status_code == 200
    denied = (403, "Permission denied")
    assert status(c, reader, topic="Job") == (200, "")
    assert status(c, reader, topic="Allocation:web") == (200, "")
    assert status(c, reader, topic="Node") == denied
    assert status(c, reader) == denied  # every topic: management only
    assert status(c, reader, topic="Job", namespace="prod") == denied
    # `*` is every namespace there is, each one checked.
    assert status(c, reader, topic="Job", namespace="*") == denied
    assert status(c, None, topic="Job") == denied
    assert status(c, root) == (200, "")
    everywhere = client_token(c, root, "everywhere", 'namespace "*" { policy = "read" }')["SecretID"]
    assert status(c, everywhere, topic="Job", namespace="*") == (200, "")


def read_until_closed(r: httpx.Response, lines: list[dict[str, Any]]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the test closing the stream under it
        for line in r.iter_lines():
            lines.append(json.loads(line))


def test_a_stream_closes_when_its_token_is_deleted_or_its_policy_no_longer_grants_it(
    cluster: Cluster,
) -> None:
    c = cluster
    root = bootstrap(c)
    deleted = client_token(c, root, "one", 'namespace "default" { policy = "read" }')
    narrowed = client_token(c, root, "two", 'namespace "default" { policy = "read" }')
    kept = client_token(c, root, "three", 'namespace "default" { policy = "read" }')
    streams = {name: open_stream(c, t["SecretID"], topic="Job") for name, t in
               (("deleted", deleted), ("narrowed", narrowed), ("kept", kept))}  # fmt: skip
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in streams}
    readers = [
        threading.Thread(target=read_until_closed, args=(r, seen[n]), daemon=True) for n, r in streams.items()
    ]
    for t in readers:
        t.start()
    try:
        c.http.put("/v1/jobs", json=job_json("before", 1), headers=headers(root))
        c.wait(lambda: all(any(f.get("Events") for f in seen[n]) for n in seen), timeout=30)
        assert (
            c.http.delete(f"/v1/acl/token/{deleted['AccessorID']}", headers=headers(root)).status_code == 200
        )
        r = c.http.put("/v1/acl/policy/two", json={"Name": "two", "Rules": 'namespace "other" { policy = "read" }'},
                       headers=headers(root))  # fmt: skip
        assert r.status_code == 200
        c.http.put("/v1/jobs", json=job_json("after", 1), headers=headers(root))
        for name in ("deleted", "narrowed"):
            readers[list(streams).index(name)].join(timeout=30)
            assert seen[name][-1].get("Error", "").startswith("subscription closed by server"), seen[name][
                -3:
            ]
        # Nothing after the change reached the closed streams; the kept one goes on.
        for name in ("deleted", "narrowed"):
            assert all(e["Key"] != "after" for f in seen[name] for e in f.get("Events") or ())
        c.wait(
            lambda: any(e["Key"] == "after" for f in seen["kept"] for e in f.get("Events") or ()), timeout=30
        )
        assert readers[list(streams).index("kept")].is_alive()
    finally:
        for r in streams.values():
            r.close()


async def stream_bodies(js: JetStreamContext) -> list[bytes]:
    info = await js.stream_info(EVENTS_STREAM)
    return [
        (await js.get_msg(EVENTS_STREAM, seq=s)).data or b""
        for s in range(info.state.first_seq, info.state.last_seq + 1)
    ]


async def test_a_secret_is_nowhere_but_in_its_answers(
    cluster: Cluster, store: EventStore, js_fresh: JetStreamContext
) -> None:
    c = cluster
    root = bootstrap(c)
    token = client_token(c, root, "ci", 'namespace "default" { policy = "write" }')
    secrets = [root, token["SecretID"]]
    # Used, updated and read back: each passes through the API more than once.
    c.http.put("/v1/jobs", json=job_json("web", 1), headers=headers(token["SecretID"]))
    c.http.post(f"/v1/acl/token/{token['AccessorID']}", headers=headers(root),
                json={"AccessorID": token["AccessorID"], "Name": "ci-2", "Type": "client", "Policies": ["ci"]})  # fmt: skip
    assert (
        c.http.get(f"/v1/acl/token/{token['AccessorID']}", headers=headers(root)).json()["SecretID"]
        == secrets[1]
    )
    last = store.last_position()
    with psycopg.connect(libpq_url(c.database_url)) as conn:
        logged = conn.execute("SELECT data::text || coalesce(metadata::text, '') FROM events").fetchall()
        assert any("ACLTokenUpserted" in row[0] for row in logged)
        deadline = time.monotonic() + 60
        while conn.execute("SELECT count(*) FROM audit_trail").fetchone()[0] < last:  # type: ignore[index]
            assert time.monotonic() < deadline, "the audit trail did not catch up"
            time.sleep(0.2)
        trail = conn.execute("SELECT event::text FROM audit_trail").fetchall()
        projected = conn.execute("SELECT doc::text FROM acl_tokens").fetchall()
    bodies = await stream_bodies(js_fresh)
    assert len(bodies) >= last
    logs = "".join(f.read_text() for f in c.log_dir.glob("*.log"))
    for secret in secrets:
        assert not any(secret in row[0] for row in logged), "a secret in the event log"
        assert not any(secret.encode() in b for b in bodies), "a secret on the EVENTS stream"
        assert not any(secret in row[0] for row in trail), "a secret in the audit trail"
        assert not any(secret in row[0] for row in projected), "a secret in the projection"
        assert secret not in logs, "a secret in a service's log"
