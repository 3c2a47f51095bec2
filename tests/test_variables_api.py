"""Nomad Variables through the HTTP API in-process, against a real PostgreSQL: writes as new
versions, check-and-set conflicts answered 409 with the variable, locks (held by one, refused
to another, lapsed after their TTL, kept for their LockDelay), bad input refused with nothing
written, key rotation with old values readable and sealed again, and python-nomad's calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore


@pytest.fixture
def client(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        database_url=database_url, nats_url="nats://unused", keyring=str(tmp_path / "keyring.json")
    )
    with TestClient(create_app(settings, EventStore(database_url))) as c:
        yield c


def test_a_variable_is_written_read_listed_and_purged(client: TestClient, store: EventStore) -> None:
    r = client.put("/v1/var/app/config", json={"Items": {"db": "s3cr3t", "user": "web"}})
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["Path"] == "app/config" and first["Namespace"] == "default"
    assert first["Items"] == {"db": "s3cr3t", "user": "web"}
    assert (
        first["CreateIndex"]
        == first["ModifyIndex"]
        == int(r.headers["X-Nomad-Index"])
        == store.last_position()
    )
    assert first["CreateTime"] == first["ModifyTime"] > 0 and "Lock" not in first
    got = client.get("/v1/var/app/config")
    assert got.status_code == 200 and got.json() == first
    assert int(got.headers["X-Nomad-Index"]) == store.last_position()
    # Each write is a new version: ModifyIndex and ModifyTime move, the creation stays.
    second = client.put("/v1/var/app/config", json={"Items": {"db": "other"}}).json()
    assert second["CreateIndex"] == first["CreateIndex"] and second["ModifyIndex"] > first["ModifyIndex"]
    assert second["CreateTime"] == first["CreateTime"] and second["ModifyTime"] >= first["ModifyTime"]
    assert client.get("/v1/var/app/config").json()["Items"] == {"db": "other"}
    client.put("/v1/var/app/other", json={"Items": {"k": "v"}})
    client.put("/v1/var/web/x", json={"Items": {"k": "v"}}, params={"namespace": "prod"})
    listed = client.get("/v1/vars", params={"prefix": "app"}).json()
    assert [v["Path"] for v in listed] == ["app/config", "app/other"]
    assert all("Items" not in v for v in listed)
    assert [v["Path"] for v in client.get("/v1/vars", params={"namespace": "*"}).json()] == [
        "app/config", "app/other", "web/x"
    ]  # fmt: skip
    page = client.get("/v1/vars", params={"per_page": 1})
    assert [v["Path"] for v in page.json()] == ["app/config"]
    assert page.headers["X-Nomad-NextToken"] == "default.app/other"
    # Every namespace's, a page at a time, as Nomad pages them.
    page = client.get("/v1/vars", params={"namespace": "*", "per_page": 2, "next_token": "default.app/other"})
    assert [(v["Namespace"], v["Path"]) for v in page.json()] == [("default", "app/other"), ("prod", "web/x")]
    assert "X-Nomad-NextToken" not in page.headers
    assert client.get("/v1/var/web/x").status_code == 404
    assert client.get("/v1/var/web/x", params={"namespace": "prod"}).json()["Items"] == {"k": "v"}
    r = client.delete("/v1/var/app/config")
    assert r.status_code == 204 and int(r.headers["X-Nomad-Index"]) == store.last_position()
    assert client.get("/v1/var/app/config").status_code == 404
    assert client.get("/v1/var/nope").status_code == 404


def test_check_and_set_conflicts_answer_409_with_the_variable(client: TestClient, store: EventStore) -> None:
    created = client.put("/v1/var/app/db", params={"cas": 0}, json={"Items": {"pw": "one"}}).json()
    # 0: it must not exist; it does, and the conflict shows it as it is.
    r = client.put("/v1/var/app/db", params={"cas": 0}, json={"Items": {"pw": "two"}})
    assert r.status_code == 409 and r.json() == created
    assert int(r.headers["X-Nomad-Index"]) == created["ModifyIndex"]
    r = client.put(
        "/v1/var/app/db", params={"cas": created["ModifyIndex"] + 100}, json={"Items": {"pw": "two"}}
    )
    assert r.status_code == 409 and r.json()["Items"] == {"pw": "one"}
    # On a variable that does not exist, a non-zero index conflicts with a zero value.
    r = client.put("/v1/var/app/none", params={"cas": 7}, json={"Items": {"pw": "x"}})
    assert r.status_code == 409 and r.json()["ModifyIndex"] == 0 and r.json()["Items"] is None
    before = store.last_position()
    r = client.put("/v1/var/app/db", params={"cas": created["ModifyIndex"]}, json={"Items": {"pw": "two"}})
    assert r.status_code == 200 and r.json()["ModifyIndex"] == before + 1
    r = client.delete("/v1/var/app/db", params={"cas": created["ModifyIndex"]})
    assert r.status_code == 409 and r.json()["Items"] == {"pw": "two"}
    assert client.delete("/v1/var/app/db", params={"cas": before + 1}).status_code == 204
    assert client.put("/v1/var/app/db", params={"cas": "x"}, json={"Items": {"a": "b"}}).status_code == 400


def test_bad_variables_are_refused_with_every_problem_and_nothing_written(
    client: TestClient, store: EventStore
) -> None:
    before = store.last_position()
    r = client.put("/v1/var/bad path!", json={"Items": {}}, params={"namespace": "*"})
    assert r.status_code == 400
    assert r.text.splitlines() == [
        'can not target wildcard ("*")namespace', "variable missing required Items object", 'invalid path "bad path!"'
    ]  # fmt: skip
    assert client.put("/v1/var/nomad/foo", json={"Items": {"a": "b"}}).status_code == 400
    assert client.put("/v1/var/" + "a" * 129, json={"Items": {"a": "b"}}).status_code == 400
    assert client.put("/v1/var/big", json={"Items": {"a": "x" * 65536}}).status_code == 400
    assert client.put("/v1/var/x", json={"Items": {"a": 1}}).status_code == 400
    r = client.put("/v1/var/x", json={"Items": {"a": "b"}, "Lock": {"TTL": "15s"}})
    assert r.status_code == 400 and r.text == "variable should not contain lock definition"
    r = client.put("/v1/var/x?lock-acquire&lock-release", json={})
    assert r.status_code == 400 and r.text == "multiple lock operations"
    assert client.put("/v1/var/x?lock-acquire&cas=1", json={}).status_code == 400
    r = client.put("/v1/var/x?lock-acquire", json={"Lock": {"TTL": "1s"}})
    assert r.status_code == 400 and "TTL must be between" in r.text
    # Paths Nomad reserves and allows.
    assert client.put("/v1/var/nomad/jobs/web", json={"Items": {"a": "b"}}).status_code == 200
    assert store.last_position() == before + 1


def _acquire(client: TestClient, path: str, **lock: str) -> tuple[int, dict[str, object]]:
    r = client.put(f"/v1/var/{path}?lock-acquire", json={"Lock": lock} if lock else {})
    return r.status_code, r.json()


def test_a_lock_is_held_by_one_renewed_released_and_refused_to_another(client: TestClient) -> None:
    status, held = _acquire(client, "locks/leader")
    assert status == 200
    lock = held["Lock"]
    assert isinstance(lock, dict) and lock["ID"] and (lock["TTL"], lock["LockDelay"]) == ("15s", "15s")
    assert held["Items"] == {}
    status, refused = _acquire(client, "locks/leader")
    assert status == 409 and refused["Path"] == "locks/leader" and "Lock" not in refused
    # Its holder may take it again; the variable shows it.
    assert _acquire(client, "locks/leader", ID=str(lock["ID"]))[0] == 200
    assert client.get("/v1/var/locks/leader").json()["Lock"]["ID"] == lock["ID"]
    # Writes and deletes that do not name the lock are refused while it is held.
    assert client.put("/v1/var/locks/leader", json={"Items": {"a": "b"}}).status_code == 409
    assert client.delete("/v1/var/locks/leader").status_code == 409
    r = client.put("/v1/var/locks/leader", json={"Items": {"a": "b"}, "Lock": {"ID": lock["ID"]}})
    assert r.status_code == 200 and r.json()["Lock"]["ID"] == lock["ID"]
    # Renewal by another is refused; by the holder keeps the ModifyIndex.
    index = client.get("/v1/var/locks/leader").json()["ModifyIndex"]
    assert client.put("/v1/var/locks/leader?lock-renew", json={"Lock": {"ID": "other"}}).status_code == 409
    r = client.put("/v1/var/locks/leader?lock-renew", json={"Lock": {"ID": lock["ID"]}})
    assert r.status_code == 200 and r.json()["ModifyIndex"] == index and "Items" not in r.json()
    assert client.put("/v1/var/nope?lock-renew", json={"Lock": {"ID": lock["ID"]}}).status_code == 404
    # Release by another: 409 with an empty lock; by the holder frees it and keeps the items.
    r = client.put("/v1/var/locks/leader?lock-release", json={"Lock": {"ID": "other"}})
    assert r.status_code == 409 and r.json()["Lock"] == {"ID": "", "TTL": "", "LockDelay": ""}
    assert client.put("/v1/var/locks/leader?lock-release", json={}).status_code == 400
    r = client.put("/v1/var/locks/leader?lock-release", json={"Lock": {"ID": lock["ID"]}})
    assert r.status_code == 200 and "Lock" not in r.json()
    got = client.get("/v1/var/locks/leader").json()
    assert "Lock" not in got and got["Items"] == {"a": "b"}
    assert (
        client.put("/v1/var/locks/leader?lock-release", json={"Lock": {"ID": lock["ID"]}}).status_code == 409
    )
    status, other = _acquire(client, "locks/leader")
    assert status == 200 and other["Lock"]["ID"] != lock["ID"]  # type: ignore[index]


def test_a_lock_not_renewed_lapses_after_its_ttl_and_its_lock_delay(client: TestClient) -> None:
    # The TTL runs from when the server took the lock: between the request sent and answered.
    sent = time.time()
    status, held = _acquire(client, "locks/ttl", TTL="10s", LockDelay="3s")
    assert status == 200
    lapses = time.time() + 10
    assert _acquire(client, "locks/ttl")[0] == 409
    # A blocking read of it answers when the lock lapses, though nothing was written.
    index = held["ModifyIndex"]
    watched = client.get("/v1/var/locks/ttl", params={"index": index, "wait": "30s"})
    assert sent + 10 - 0.5 < time.time() < lapses + 3 and "Lock" not in watched.json()
    while time.time() < lapses + 0.2:
        time.sleep(0.2)
    # Lapsed: no one holds it (reads no longer show it), but its LockDelay keeps it from others.
    assert "Lock" not in client.get("/v1/var/locks/ttl").json()
    holder = held["Lock"]["ID"]  # type: ignore[index]
    assert client.put("/v1/var/locks/ttl?lock-renew", json={"Lock": {"ID": holder}}).status_code == 409
    assert _acquire(client, "locks/ttl")[0] == 409
    while time.time() < lapses + 3.2:
        time.sleep(0.2)
    status, taken = _acquire(client, "locks/ttl")
    assert status == 200 and taken["Lock"]["ID"] != holder  # type: ignore[index]


def test_key_rotation_keeps_old_values_readable_and_seals_them_again(
    client: TestClient, store: EventStore
) -> None:
    client.put("/v1/var/a", json={"Items": {"k": "one"}})
    client.put("/v1/var/b", json={"Items": {"k": "two"}})
    client.put("/v1/var/c", json={"Items": {"k": "three"}})
    (old,) = client.get("/v1/operator/keyring/keys").json()
    assert old["State"] == "active" and old["Algorithm"] == "aes256-gcm"
    new = client.put("/v1/operator/keyring/rotate").json()["Key"]
    assert new["KeyID"] != old["KeyID"] and new["State"] == "active"
    assert [k["State"] for k in client.get("/v1/operator/keyring/keys").json()] == ["inactive", "active"]

    def key_of(path: str) -> str:
        var = store_reads(store).variable("default", path)
        assert var is not None
        return var.sealed.key_id

    # Old values still open; a new write is sealed under the new key.
    assert client.get("/v1/var/a").json()["Items"] == {"k": "one"}
    assert key_of("a") == old["KeyID"]
    client.put("/v1/var/a", json={"Items": {"k": "uno"}})
    assert key_of("a") == new["KeyID"] and key_of("b") == old["KeyID"]
    # A full rotation seals every variable again, keeping its index.
    index_b = client.get("/v1/var/b").json()["ModifyIndex"]
    newest = client.put("/v1/operator/keyring/rotate", params={"full": "true"}).json()["Key"]
    assert {key_of(p) for p in "abc"} == {newest["KeyID"]}
    assert [client.get(f"/v1/var/{p}").json()["Items"]["k"] for p in "abc"] == ["uno", "two", "three"]
    assert client.get("/v1/var/b").json()["ModifyIndex"] == index_b
    # The log replayed gives the same projection (a re-seal included).
    client.put("/v1/var/locks/x?lock-acquire", json={})
    client.delete("/v1/var/c")
    live = store.projection_dump()
    assert live["variables"] and len(live["variables"]) == 3
    store.rebuild_projections()
    assert store.projection_dump() == live


def store_reads(store: EventStore):  # type: ignore[no-untyped-def]
    from drover.runtime.store.queries import Reads

    return Reads(store)


def test_reads_block_until_the_variable_changes(client: TestClient) -> None:
    index = client.put("/v1/var/app/watched", json={"Items": {"v": "1"}}).json()["ModifyIndex"]
    client.put("/v1/var/app/quiet", json={"Items": {"v": "1"}})

    def write_later() -> None:
        time.sleep(0.5)
        client.put("/v1/var/app/other", json={"Items": {"v": "x"}})  # wakes the list, not the variable
        time.sleep(0.5)
        client.put("/v1/var/app/watched", params={"cas": index}, json={"Items": {"v": "2"}})

    writer = threading.Thread(target=write_later)
    writer.start()
    t0 = time.monotonic()
    got = client.get("/v1/var/app/watched", params={"index": index + 1, "wait": "5s"})
    waited = time.monotonic() - t0
    writer.join()
    assert got.json()["Items"] == {"v": "2"} and 0.9 < waited < 4.5, waited
    assert int(got.headers["X-Nomad-Index"]) == got.json()["ModifyIndex"]
    # The list wakes on any variable's change.
    last = int(got.headers["X-Nomad-Index"])
    threading.Timer(0.5, lambda: client.delete("/v1/var/app/other")).start()
    t0 = time.monotonic()
    listed = client.get("/v1/vars", params={"index": last, "wait": "5s"})
    assert 0.4 < time.monotonic() - t0 < 4.5 and [v["Path"] for v in listed.json()] == [
        "app/quiet",
        "app/watched",
    ]
