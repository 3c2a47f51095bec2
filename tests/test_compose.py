"""deploy/docker-compose.yml end to end: the stack built on the images of deploy/images, started
under a project name of its own with the API on a free loopback port, every service and replica
up; `drover sim`'s nodes register through the API, a job is placed on them and runs; `down -v`
leaves nothing behind, whether the test passed or not. And, with no Docker engine needed, the
file as Compose resolves it: published on loopback alone, every secret from the env file.

Driven by testcontainers' DockerCompose, which runs `docker compose`: the docker CLI with
PyPI's Compose v2 as its plugin, in a DOCKER_CONFIG of the test's own."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

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
from .containers import compose_binary

# The services and how many of each the compose file runs (migrate runs once and exits).
REPLICAS = {
    "nats": 1, "postgres": 1, "api": 1, "relay": 1, "broker": 1, "audit": 1,
    "planner": 2, "worker": 2, "leader": 2, "gc": 2,
}  # fmt: skip
NODES = 2

# A cold build of the Drover image installs its dependencies from PyPI.
pytestmark = pytest.mark.timeout(1200)


def test_compose_stack_places_a_job_on_simulated_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = stack_env(tmp_path, monkeypatch)
    with compose_up("docker-compose.yml", env) as compose:
        check_stack(compose, env, tmp_path)


def check_stack(compose: Any, env: dict[str, str], tmp_path: Path) -> None:
    check_up(compose, env, REPLICAS)

    base = api_base(env)
    root, intro = bootstrap(base)
    with (
        simulated_nodes(base, intro, NODES, "ct-", tmp_path),
        httpx.Client(base_url=base, timeout=10, headers={"X-Nomad-Token": root}) as http,
    ):
        wait(
            "every simulated node ready",
            lambda: sum(n["Status"] == "ready" for n in http.get("/v1/nodes").json()) == NODES,
        )
        register(http, "web", 3)
        allocs = running_allocs(http, "web", 3)
        assert {a["NodeID"] for a in allocs} <= {f"ct-{i:05d}" for i in range(NODES)}
        [evaluation] = http.get("/v1/job/web/evaluations").json()
        assert evaluation["Status"] == "complete" and not evaluation.get("FailedTGAllocs")
        # A variable: the API seals it with the keyring on its volume, and reads it back.
        r = http.put("/v1/var/app/config", json={"Items": {"db": "s3cr3t"}})
        assert r.status_code == 200, r.text
        assert http.get("/v1/var/app/config").json()["Items"] == {"db": "s3cr3t"}


def resolved(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`docker compose config` of the file with `env` as its env file (the engine not asked)."""
    path = tmp_path / "resolve.env"
    path.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return subprocess.run(
        [str(compose_binary()), "-f", str(DEPLOY / "docker-compose.yml"), "--env-file", str(path),
         "config", "--format", "json"],
        capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")},
    )  # fmt: skip


def test_the_compose_file_publishes_on_loopback_and_writes_no_secret(tmp_path: Path) -> None:
    passwords = {
        "DROVER_POSTGRES_PASSWORD": secrets.token_hex(16),
        "DROVER_NATS_PASSWORD": secrets.token_hex(16),
    }
    # Every password the file names is an interpolation (`${VAR:?...}`, quoted for NATS or not), an alias of one, or
    # left to the server's environment (`$$VAR`): none is written in it.
    lines = [
        line
        for line in (DEPLOY / "docker-compose.yml").read_text().splitlines()
        if not line.lstrip().startswith("#")
    ]
    values = [m.group(1) for line in lines if (m := re.search(r"(?i)password[\w-]*\"?\s*:\s*(.+)$", line))]
    assert len(values) >= 5
    assert all(re.match(r"(&[\w-]+ )?('\")?\$\{\w+:\?|\*[\w-]+\}?$|\$\$\w+", v) for v in values), values
    # Every secret is required of the env file: without one, Compose refuses the file.
    for name in passwords:
        missing = resolved({k: v for k, v in passwords.items() if k != name}, tmp_path)
        assert missing.returncode != 0 and f"required variable {name} is missing" in missing.stderr
    done = resolved(passwords, tmp_path)
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    services = config["services"]
    published = {name: svc["ports"] for name, svc in services.items() if svc.get("ports")}
    assert list(published) == ["api"]  # NATS and PostgreSQL published nowhere
    assert all(port["host_ip"] == "127.0.0.1" for port in published["api"])
    drover = {name: svc for name, svc in services.items() if str(svc.get("image", "")).startswith("drover")}
    assert set(drover) >= {"api", "relay", "broker", "planner", "worker", "leader", "gc", "audit", "migrate"}
    for name, svc in drover.items():
        env = svc["environment"]
        # The database's password apart from its URL, which holds none.
        assert urlsplit(env["DROVER_DATABASE_URL"]).password is None, name
        assert env["DROVER_DATABASE_PASSWORD"] == passwords["DROVER_POSTGRES_PASSWORD"], name
        if name != "migrate":
            assert urlsplit(env["DROVER_NATS_URL"]).password is None, name
            assert (env["DROVER_NATS_USER"], env["DROVER_NATS_PASSWORD"]) == (
                "drover", passwords["DROVER_NATS_PASSWORD"]
            ), name  # fmt: skip
            assert env["DROVER_ACL_ENABLED"] == "true", name
    # NATS wants its user: the password from its environment, not written in its configuration;
    # quoted, as NATS parses it as a value of its configuration (a string whatever it looks like).
    nats = services["nats"]
    assert nats["environment"]["NATS_PASSWORD"] == f'"{passwords["DROVER_NATS_PASSWORD"]}"'
    assert [c["target"] for c in nats["configs"]] == [nats["command"][-1]]
    content = config["configs"][nats["configs"][0]["source"]]["content"]
    assert "authorization" in content and "NATS_PASSWORD" in content
    assert passwords["DROVER_NATS_PASSWORD"] not in content
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == passwords["DROVER_POSTGRES_PASSWORD"]
