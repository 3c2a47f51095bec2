"""deploy/docker-compose.ha.yml end to end: Drover's HA topology as containers (three NATS servers
in one JetStream cluster, PostgreSQL under pg_auto_failover: a monitor, a primary and its
synchronous standby) built on the images of deploy/images, under a project name of its own with
the API on a free loopback port. Every stream and bucket is kept on the three servers; `drover
sim`'s nodes register and a job is placed; then the PostgreSQL primary's container and the NATS
server leading JetStream's meta group are killed (`docker kill`, as the loss of their machines):
the standby is promoted, and a job registered after is placed. `down -v` leaves nothing behind.
And, with no Docker engine needed, the file as Compose resolves it.

Driven by testcontainers' DockerCompose, as tests/test_compose.py (tests/composestack.py)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from drover.runtime.embeddedha import FAILOVER_SETTINGS

from .composestack import (
    DEPLOY,
    api_base,
    bootstrap,
    check_up,
    compose_up,
    register,
    running_allocs,
    simulated_nodes,
    stack_env,
    wait,
)
from .containers import compose_binary, docker_client

FILE = "docker-compose.ha.yml"
REPLICAS = {
    "nats-1": 1, "nats-2": 1, "nats-3": 1, "pg-monitor": 1, "pg-a": 1, "pg-b": 1,
    "api": 1, "relay": 1, "broker": 1, "audit": 1, "planner": 2, "worker": 2, "leader": 2, "gc": 2,
}  # fmt: skip
DATA_NODES = ("pg-a", "pg-b")
NODES = 2
# What the services create on the cluster (the buckets are streams named KV_<bucket>).
STREAMS = {"EVENTS", "EVALS"}

pytestmark = pytest.mark.timeout(1200)


def test_ha_stack_places_a_job_after_losing_the_primary_and_a_nats_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = stack_env(tmp_path, monkeypatch)
    with compose_up(FILE, env) as compose:
        check_ha_stack(compose, env, tmp_path)


def check_ha_stack(compose: Any, env: dict[str, str], tmp_path: Path) -> None:
    check_up(compose, env, REPLICAS)
    states = wait("a primary and its synchronous standby", lambda: formation(compose) or None)
    [primary] = [node for node, state in states.items() if state == "primary"]
    [standby] = [node for node in DATA_NODES if node != primary]

    base = api_base(env)
    root, intro = bootstrap(base)
    with (
        simulated_nodes(base, intro, NODES, "ha-", tmp_path),
        httpx.Client(base_url=base, timeout=10, headers={"X-Nomad-Token": root}) as http,
    ):
        wait("every simulated node ready", lambda: ready_nodes(http) == NODES)
        register(http, "before", 2)
        running_allocs(http, "before", 2)
        # Every stream and bucket on the three servers (the services were given all three).
        streams = jetstream_streams(compose)
        assert set(streams) >= STREAMS and any(s.startswith("KV_") for s in streams), streams
        assert set(streams.values()) == {3}, streams

        nats = jetstream_meta_leader(compose)
        client = docker_client()
        for service in (primary, nats):
            client.containers.get(compose.get_container(service).ID).kill()
        killed = time.monotonic()
        register(http, "after", 2, timeout=90)
        running_allocs(http, "after", 2, timeout=60)
        print(f"killed {primary} and {nats}: a new job placed {time.monotonic() - killed:.1f} s after",
              file=sys.stderr)  # fmt: skip
        # The standby took over (alone until a standby is back: wait_primary).
        assert formation(compose, complete=False)[standby] in ("wait_primary", "primary")
        assert len(http.get("/v1/job/before/allocations").json()) == 2


def formation(compose: Any, complete: bool = True) -> dict[str, str]:
    """Each data node's state as the monitor has it; with `complete`, {} until one is the
    primary and the other its standby."""
    out, _, code = compose.exec_in_container(["pg-ha", "state"], "pg-monitor")
    states = {n["nodename"]: n["current_group_state"] for n in json.loads(out)} if code == 0 else {}
    if complete and sorted(states.values()) != ["primary", "secondary"]:
        return {}
    return states


def nats_monitor(compose: Any, service: str, path: str) -> Any:
    """A NATS server's monitoring endpoint (on the container's loopback alone), as JSON."""
    script = f"exec 3<>/dev/tcp/127.0.0.1/8222 && printf 'GET {path} HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
    out, _, _ = compose.exec_in_container(["bash", "-c", script], service)
    return json.loads(out.split("\r\n\r\n", 1)[1])


def jetstream_streams(compose: Any) -> dict[str, int]:
    """Every stream of the cluster and the replicas its configuration asks for."""
    jsz = nats_monitor(compose, "nats-1", "/jsz?accounts=true&streams=true&config=true")
    return {
        s["name"]: s["config"]["num_replicas"]
        for account in jsz.get("account_details", [])
        for s in account.get("stream_detail", [])
    }


def jetstream_meta_leader(compose: Any) -> str:
    return str(nats_monitor(compose, "nats-1", "/jsz")["meta_cluster"]["leader"])


def ready_nodes(http: httpx.Client) -> int:
    return sum(n["Status"] == "ready" for n in http.get("/v1/nodes").json())


# ---- The file as Compose resolves it (no engine needed) ----


def resolved(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "resolve.env"
    path.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return subprocess.run(
        [str(compose_binary()), "-f", str(DEPLOY / FILE), "--env-file", str(path), "config", "--format", "json"],
        capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")},
    )  # fmt: skip


def test_the_ha_compose_file_publishes_the_api_alone_and_writes_no_secret(tmp_path: Path) -> None:
    passwords = {
        "DROVER_POSTGRES_PASSWORD": secrets.token_hex(16),
        "DROVER_NATS_PASSWORD": secrets.token_hex(16),
    }
    for name in passwords:
        missing = resolved({k: v for k, v in passwords.items() if k != name}, tmp_path)
        assert missing.returncode != 0 and f"required variable {name} is missing" in missing.stderr
    done = resolved(passwords, tmp_path)
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    services = config["services"]
    assert {name for name, svc in services.items() if svc.get("ports")} == {"api"}
    assert all(p["host_ip"] == "127.0.0.1" for p in services["api"]["ports"])
    # Each server a volume of its own.
    volumes = {name: [v["source"] for v in services[name]["volumes"]] for name in REPLICAS if "-" in name}
    assert sorted(v for vs in volumes.values() for v in vs) == sorted(volumes), volumes
    # No password in the file's text, nor in anything Compose hands a container but the
    # variables meant for it.
    text = (DEPLOY / FILE).read_text()
    assert not any(p in text for p in passwords.values())
    for name, svc in services.items():
        env = svc.get("environment", {})
        carriers = {k for k, v in env.items() if v.strip('"') in passwords.values()}
        assert carriers <= {"DROVER_DATABASE_PASSWORD", "DROVER_NATS_PASSWORD", "NATS_PASSWORD",
                            "POSTGRES_PASSWORD"}, name  # fmt: skip
        for key in ("DROVER_DATABASE_URL", "DROVER_NATS_URL"):
            if key in env:
                assert urlsplit(env[key]).password is None, name
    api = services["api"]["environment"]
    # Every service is given the three NATS servers and both PostgreSQL nodes, writes to the primary.
    assert [urlsplit(u).hostname for u in api["DROVER_NATS_URL"].split(",")] == ["nats-1", "nats-2", "nats-3"]
    query = parse_qs(urlsplit(api["DROVER_DATABASE_URL"]).query)
    assert query == {"host": ["pg-a:5432", "pg-b:5432"], "target_session_attrs": ["read-write"]}
    content = config["configs"]["nats"]["content"]
    assert passwords["DROVER_NATS_PASSWORD"] not in content and "$NATS_PASSWORD" in content


def test_the_containers_monitor_keeps_the_timings_of_drover_up_ha() -> None:
    """deploy/images/postgres/pg-ha sets the monitor's timings drover.runtime.embeddedha uses."""
    script = (DEPLOY / "images" / "postgres" / "pg-ha").read_text()
    found = dict(re.findall(r"ALTER SYSTEM SET pgautofailover\.(\w+) = (\d+);", script))
    assert {k: int(v) for k, v in found.items()} == FAILOVER_SETTINGS
