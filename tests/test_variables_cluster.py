"""Nomad Variables on a whole cluster: `drover var` as Nomad's CLI, python-nomad's variable
calls, and the secret never in the clear outside the API's answers - not in the event log,
the JetStream stream that relays it, nor the audit trail."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import nats
import nomad  # type: ignore[import-untyped]
import psycopg
import pytest

from drover.runtime.bus import EVENTS_STREAM
from drover.runtime.embedded import free_port, wait_for_port
from drover.runtime.store import EventStore, libpq_url

from .cluster import Cluster, nats_options
from .prefork import run_drover, spawn

pytestmark = pytest.mark.cluster
SECRET = "s3cr3t-value"


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, workers=1).start()
    c.spawn("audit")
    yield c
    c.stop()


def drover(c: Cluster, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DROVER_ADDR", "NOMAD_ADDR")}
    p = run_drover(list(args), {**env, "NOMAD_ADDR": str(c.http.base_url)}, 60, stdin)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def ok(c: Cluster, *args: str, stdin: str = "") -> str:
    p = drover(c, *args, stdin=stdin)
    assert p.returncode == 0, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


async def stream_bodies(nats_url: str, until: int) -> list[bytes]:
    """Every raw message of the EVENTS stream, once it holds `until` of them."""
    nc = await nats.connect(nats_url, **nats_options())
    try:
        js = nc.jetstream()
        deadline = time.monotonic() + 30
        while (await js.stream_info(EVENTS_STREAM)).state.messages < until:
            assert time.monotonic() < deadline, "the relay did not publish the log"
            await asyncio.sleep(0.1)
        info = await js.stream_info(EVENTS_STREAM)
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(EVENTS_STREAM, seq=seq)
            out.append(msg.data or b"")
            out.extend(str(v).encode() for v in (msg.headers or {}).values())
        return out
    finally:
        await nc.close()


def test_var_cli_and_no_plaintext_in_the_log_the_stream_or_the_audit_trail(
    cluster: Cluster, store: EventStore, database_url: str, nats_url: str
) -> None:
    c = cluster
    out = ok(c, "var", "put", "app/config", f"db={SECRET}", "user=web")
    assert out.strip() == f'Created variable "app/config" with modify index {store.last_position()}'
    assert ok(c, "var", "get", "-item", "db", "app/config").strip() == SECRET
    got = json.loads(ok(c, "var", "get", "app/config"))  # not a terminal: JSON
    assert got["Items"] == {"db": SECRET, "user": "web"} and got["Path"] == "app/config"
    # As Nomad's, a put over an existing variable is a check-and-set unless forced.
    p = drover(c, "var", "put", "app/config", "db=other")
    assert (
        p.returncode == 1 and "Check-and-Set conflict" in p.stderr and f"({got['ModifyIndex']})" in p.stderr
    )
    ok(c, "var", "put", "-check-index", str(got["ModifyIndex"]), "app/config", f"db={SECRET}", "user=")
    assert json.loads(ok(c, "var", "get", "app/config"))["Items"] == {"db": SECRET}
    spec = json.dumps({"Path": "app/spec", "Items": {"token": "t0k"}})
    ok(c, "var", "put", "-in", "json", "-", stdin=spec)
    ok(c, "var", "put", "-force", "app/spec", "token=t1k")
    assert ok(c, "var", "get", "-item", "token", "app/spec").strip() == "t1k"
    listed = ok(c, "var", "list", "app")
    assert "Namespace" in listed and "app/config" in listed and "app/spec" in listed
    assert ok(c, "var", "list", "nothing").strip() == "No matching variables found"
    assert ok(c, "var", "purge", "app/spec").strip() == 'Successfully purged variable "app/spec"!'
    p = drover(c, "var", "get", "app/spec")
    assert p.returncode == 1 and "Variable not found" in p.stderr
    ok(c, "operator", "root", "keyring", "rotate")
    assert ok(c, "var", "get", "-item", "db", "app/config").strip() == SECRET

    conninfo = libpq_url(database_url)
    with psycopg.connect(conninfo) as conn:
        log = [r[0] for r in conn.execute("SELECT data::text FROM events ORDER BY position")]
        projection = [r[0] for r in conn.execute("SELECT doc::text FROM variables")]
    assert len(log) == store.last_position() and any('"VariableUpserted"' in e for e in log)
    assert any('"KeyID"' in e for e in log) and not any(SECRET in e for e in log)
    assert projection and not any(SECRET in d for d in projection)
    bodies = asyncio.run(stream_bodies(nats_url, len(log)))
    assert any(b"VariableUpserted" in b for b in bodies) and not any(SECRET.encode() in b for b in bodies)

    def trail() -> list[str]:
        with psycopg.connect(conninfo) as conn:
            if not conn.execute("SELECT to_regclass('audit_trail') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
                return []
            return [r[0] for r in conn.execute("SELECT event::text FROM audit_trail")]

    rows = c.wait(lambda: (lambda t: t if len(t) >= len(log) else None)(trail()), timeout=30)
    assert any("VariableUpserted" in r for r in rows) and not any(SECRET in r for r in rows)
    # The keyring is a file of its own, beside none of these.
    assert (c.log_dir / "keyring.json").exists()


def test_python_nomad_variable_calls(cluster: Cluster) -> None:
    n = nomad.Nomad(address=f"http://127.0.0.1:{cluster.port}", timeout=30)
    created = n.variable.create_variable("app/py", {"Items": {"k": "v"}})
    assert created["Items"] == {"k": "v"} and created["Path"] == "app/py"
    assert n.variable.get_variable("app/py")["Items"] == {"k": "v"}
    assert "app/py" in n.variables
    assert [v["Path"] for v in n.variables.get_variables(prefix="app")] == ["app/py"]
    with pytest.raises(nomad.api.exceptions.BaseNomadException):
        n.variable.create_variable("app/py", {"Items": {"k": "w"}}, cas=0)
    n.variable.create_variable("app/py", {"Items": {"k": "w"}}, cas=created["ModifyIndex"])
    assert n.variable.get_variable("app/py")["Items"] == {"k": "w"}
    n.variable.delete_variable("app/py")
    with pytest.raises(nomad.api.exceptions.URLNotFoundNomadException):
        n.variable.get_variable("app/py")


def test_two_api_processes_share_the_keyring_through_rotations(cluster: Cluster) -> None:
    """A second API process, as `drover up` or a deployment would run it beside the first: what
    one seals the other opens, before and after a rotation made by either."""
    port = free_port()
    proc = spawn(
        "drover.api", [], {**cluster.env(), "DROVER_API_PORT": str(port)}, cluster.log_dir / "api-2.log"
    )
    try:
        wait_for_port(port, 60, proc=proc)
        one, two = cluster.http, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        assert one.put("/v1/var/shared/a", json={"Items": {"k": "one"}}).status_code == 200
        assert two.get("/v1/var/shared/a").json()["Items"] == {"k": "one"}
        rotated = two.put("/v1/operator/keyring/rotate").json()["Key"]["KeyID"]
        # The first process seals under the key the second made, and both open every value.
        assert one.put("/v1/var/shared/b", json={"Items": {"k": "two"}}).status_code == 200
        assert [
            k["KeyID"] for k in one.get("/v1/operator/keyring/keys").json() if k["State"] == "active"
        ] == [rotated]
        for api in (one, two):
            assert api.get("/v1/var/shared/a").json()["Items"] == {"k": "one"}
            assert api.get("/v1/var/shared/b").json()["Items"] == {"k": "two"}
        two.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
