"""No secret where it could be read: with the services (the audit subscriber too) and
`drover sim` running at DEBUG, nodes registering, beating and reporting allocs, the raw event
log, the projections, the JetStream EVENTS stream, the audit trail, the event stream and node
reads, every process's log file and every process's command line are searched for the nodes'
SecretIDs, the NATS password and the PostgreSQL password: none is found. What is kept in their
place (the secrets' keyed hashes) is found, so the search is not looking in empty places."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg

from drover.runtime.bus import EVENTS_STREAM, connect
from drover.runtime.embedded import EmbeddedNats
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url

from .cluster import NODE_SECRET, Cluster, job_json, nats_credentials, node_json

ENV = {"DROVER_LOG_LEVEL": "DEBUG", "DROVER_HEARTBEAT_MIN_TTL": "2", "DROVER_HEARTBEAT_GRACE": "2"}


def _secrets(tmp_path: Path, database_url: str) -> dict[str, str]:
    settings = Settings(database_url=database_url)
    nats = settings.nats_credentials()
    database = settings.database().password
    assert nats is not None and nats.password.get_secret_value(), "the harness's NATS wants a password"
    assert database, "the harness's PostgreSQL wants a password"
    return {
        "the hand-made nodes' secret": NODE_SECRET,
        "drover sim's secret": (tmp_path / "sim" / "secret-id").read_text().strip(),
        "the NATS password": nats.password.get_secret_value(),
        "the PostgreSQL password": database,
    }


def _found(where: str, text: str, secrets: dict[str, str]) -> list[str]:
    return [f"{what} in {where}" for what, secret in secrets.items() if secret in text]


async def _stream_text(nats_url: str) -> str:
    """Every message of EVENTS, headers and bodies."""
    nc = await connect(nats_url, "test-secrets", nats_credentials())
    try:
        js = nc.jetstream()
        state = (await js.stream_info(EVENTS_STREAM)).state
        parts = []
        for seq in range(state.first_seq, state.last_seq + 1):
            msg = await js.get_msg(EVENTS_STREAM, seq)
            parts.append(f"{msg.headers} {msg.data.decode(errors='replace')}")
        return "\n".join(parts)
    finally:
        await nc.close()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _event_stream(base_url: str) -> list[str]:
    """/v1/event/stream from the start, for as long as it sends without a pause."""
    frames: list[str] = []
    with (
        httpx.stream(
            "GET", f"{base_url}/v1/event/stream", params={"index": 1}, timeout=httpx.Timeout(10.0, read=2.0)
        ) as r,
        contextlib.suppress(httpx.ReadTimeout),
    ):  # the stream goes on: what came is enough
        for line in r.iter_lines():
            frames.append(line)
    return frames


def _audited(conninfo: str, last: int) -> bool:
    with psycopg.connect(conninfo) as conn:
        exists = conn.execute("SELECT to_regclass('audit_trail') IS NOT NULL").fetchone()
        row = conn.execute("SELECT count(*) FROM audit_trail").fetchone() if exists and exists[0] else None
    return bool(row and row[0] >= last)


def _search_the_database(conninfo: str, secrets: dict[str, str]) -> tuple[list[str], set[str]]:
    """What of `secrets` the log, the trail and the projections hold; and the nodes' hashes."""
    problems: list[str] = []
    with psycopg.connect(conninfo) as conn:
        for table, columns in (
            ("events", "data::text || metadata::text"),
            ("audit_trail", "event::text || coalesce(traceparent, '')"),
            ("nodes", "doc::text || coalesce(secret_hash, '')"),
            ("allocs", "doc::text"),
            ("evals", "doc::text"),
            ("jobs", "doc::text"),
        ):
            rows = conn.execute(f"SELECT {columns} FROM {table}").fetchall()
            assert rows, table
            problems += _found(f"table {table}", "\n".join(r[0] for r in rows), secrets)
        hashes = {r[0] for r in conn.execute("SELECT secret_hash FROM nodes").fetchall()}
        registered = conn.execute("SELECT data::text FROM events WHERE type = 'NodeRegistered'").fetchall()
    # What is kept instead: the hashes, beside the nodes and in their registrations.
    assert len(hashes) == 2 and None not in hashes  # the sim's nodes share one secret
    assert registered and all(any(h in r[0] for h in hashes) for r in registered)
    return problems, hashes


def test_no_secret_in_the_log_the_stream_the_trail_the_reads_or_the_logs(
    database_url: str, nats_url: str, nats_server: EmbeddedNats | str, tmp_path: Path, js_fresh: object
) -> None:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    store = EventStore(database_url)
    sim_log = (tmp_path / "sim.log").open("wb")
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", "3",
         "--prefix", "sec-", "--data-dir", str(tmp_path / "sim")],
        stdout=sim_log, stderr=subprocess.STDOUT, env=c.env(),
    )  # fmt: skip
    try:
        c.spawn("audit")
        c.put("/v1/drover/node/register", {"Node": node_json("handmade")})
        c.wait(lambda: len([n for n in c.get("/v1/nodes") if n["Status"] == "ready"]) == 4, timeout=60)
        c.put("/v1/jobs", job_json("web", 3, rolling=False))
        running = lambda: sum(a["ClientStatus"] == "running" for a in c.get("/v1/job/web/allocations")) == 3  # noqa: E731
        c.wait(running, timeout=60)
        c.put("/v1/drover/heartbeats", {"NodeIDs": ["handmade"]})
        # Refused attempts too: a secret that is not the node's, a registration taking another's node.
        assert c.http.put("/v1/drover/node/sec-00000/heartbeat").status_code == 403
        other = {**node_json("sec-00001"), "SecretID": "0e5a3c1d-2b4f-4a6e-8c7d-9f0a1b2c3d4e"}
        assert c.http.put("/v1/drover/node/register", json={"Node": other}).status_code == 403
        conninfo = libpq_url(database_url)
        last = store.last_position()
        c.wait(lambda: _audited(conninfo, last), timeout=60)
        secrets = _secrets(tmp_path, database_url)
        problems, hashes = _search_the_database(conninfo, secrets)
        stream_text = asyncio.run(_stream_text(nats_url))
        assert "NodeRegistered" in stream_text and all(h in stream_text for h in hashes)
        problems += _found("the EVENTS stream", stream_text, secrets)
        reads = [c.http.get("/v1/nodes").text] + [
            c.http.get(f"/v1/node/{n}").text for n in ("handmade", "sec-00000", "sec-00001", "sec-00002")
        ]
        frames = _event_stream(str(c.http.base_url))
        assert any("NodeRegistration" in f for f in frames)
        problems += _found("the API's reads and event stream", "\n".join(reads + frames), secrets)
        pids = [p.pid for procs in c.procs.values() for p in procs] + [sim.pid]
        problems += _found("a process's command line", "\n".join(_cmdline(pid) for pid in pids), secrets)
    finally:
        sim.send_signal(signal.SIGINT)
        sim.wait(timeout=30)
        sim_log.close()
        c.stop()
        store.close()
    logs = sorted(tmp_path.glob("*.log"))
    assert {p.name for p in logs} >= {"api-0.log", "audit-0.log", "relay-0.log", "leader-0.log", "sim.log"}
    assert " DEBUG " in (tmp_path / "api-0.log").read_text()  # the services did log at DEBUG
    if isinstance(nats_server, EmbeddedNats):
        logs.append(nats_server.data_dir / "nats.log")
    for path in logs:
        problems += _found(f"log {path.name}", path.read_text(errors="replace"), secrets)
    assert problems == []
