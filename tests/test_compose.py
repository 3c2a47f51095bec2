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
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import pytest

from drover.runtime.embedded import free_port

from .cluster import job_json
from .containers import LOOPBACK, compose_binary, docker_client, docker_config_with_compose, images

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
# The services and how many of each the compose file runs (migrate runs once and exits).
REPLICAS = {
    "nats": 1, "postgres": 1, "api": 1, "relay": 1, "broker": 1, "audit": 1,
    "planner": 2, "worker": 2, "leader": 2, "gc": 2,
}  # fmt: skip
NODES = 2
PROJECT_LABEL = "com.docker.compose.project"
T = TypeVar("T")

# A cold build of the Drover image installs its dependencies from PyPI.
pytestmark = pytest.mark.timeout(1200)


def wait(what: str, check: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except httpx.HTTPError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.25)


@pytest.fixture
def stack_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The stack's env file (the local images, a random password, a project name and a free
    port of the test's own), and `docker compose` set up for this test alone."""
    built = images("python", "nats", "postgres")
    monkeypatch.setenv("DOCKER_CONFIG", str(docker_config_with_compose(tmp_path / "docker")))
    env = {
        "COMPOSE_PROJECT_NAME": f"drover-test-{secrets.token_hex(4)}",
        "DROVER_POSTGRES_PASSWORD": secrets.token_hex(16),
        "DROVER_NATS_PASSWORD": secrets.token_hex(16),
        "DROVER_API_PORT": str(free_port()),
        "DROVER_PYTHON_IMAGE": built["python"],
        "DROVER_NATS_IMAGE": built["nats"],
        "DROVER_POSTGRES_IMAGE": built["postgres"],
        "DROVER_IMAGE": "drover:compose-test",
    }
    path = tmp_path / "stack.env"
    path.touch(mode=0o600)
    path.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    env["env_file"] = str(path)
    yield env


def project_leftovers(project: str) -> list[str]:
    """The containers, volumes and networks still labelled with the compose project."""
    client = docker_client()
    label = {"label": f"{PROJECT_LABEL}={project}"}
    return (
        [c.name for c in client.containers.list(all=True, filters=label)]
        + [v.name for v in client.volumes.list(filters=label)]
        + [n.name for n in client.networks.list(filters=label)]
    )


def remove_project_images(project: str) -> None:
    """The Drover image the project built: Compose labels it with the project's name, so each
    run's is an image of its own (the next build takes its layers from the build cache)."""
    client = docker_client()
    for image in client.images.list(filters={"label": f"{PROJECT_LABEL}={project}"}):
        client.images.remove(image.id, force=True)


def test_compose_stack_places_a_job_on_simulated_nodes(stack_env: dict[str, str], tmp_path: Path) -> None:
    from testcontainers.compose import DockerCompose

    project, port = stack_env["COMPOSE_PROJECT_NAME"], int(stack_env["DROVER_API_PORT"])
    compose = DockerCompose(
        DEPLOY, compose_file_name="docker-compose.yml", env_file=stack_env["env_file"], build=True, wait=True
    )
    started = time.monotonic()
    try:
        compose.start()  # `up --build --wait`
        print(f"{project}: built and up in {time.monotonic() - started:.1f} s", file=sys.stderr)
        check_stack(compose, port, tmp_path)
    except BaseException:
        report_logs(compose, stack_env["DROVER_POSTGRES_PASSWORD"])  # `up` failing too
        raise
    finally:
        try:
            compose.stop()  # `down --volumes`
        finally:
            print(f"{project}: {time.monotonic() - started:.1f} s in all, down included", file=sys.stderr)
            remove_project_images(project)
    assert project_leftovers(project) == []


def check_stack(compose: Any, port: int, tmp_path: Path) -> None:
    # The API on loopback only, at the port the env file chose.
    assert compose.get_service_host_and_port("api", 4646) == (LOOPBACK, port)
    running = Counter(c.Service for c in compose.get_containers() if c.State == "running")
    assert running == REPLICAS
    assert compose.get_container("migrate", include_all=True).ExitCode == 0

    base = f"http://{LOOPBACK}:{port}"
    # ACLs are on in the compose file: the operator bootstraps, the simulator registers its
    # nodes with a node:write token (Nomad's node introduction).
    root = httpx.post(f"{base}/v1/acl/bootstrap", timeout=10).json()["SecretID"]
    headers = {"X-Nomad-Token": root}
    assert httpx.get(f"{base}/v1/nodes", timeout=10).status_code == 403
    rules = {"Name": "nodes", "Rules": 'node { policy = "write" }'}
    httpx.put(f"{base}/v1/acl/policy/nodes", json=rules, headers=headers, timeout=10).raise_for_status()
    intro = httpx.post(f"{base}/v1/acl/token", json={"Type": "client", "Policies": ["nodes"]}, headers=headers,
                       timeout=10).json()["SecretID"]  # fmt: skip
    log = (tmp_path / "sim.log").open("wb")
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", base, "--nodes", str(NODES), "--prefix", "ct-",
         "--data-dir", str(tmp_path / "sim")],
        stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "DROVER_CLIENT_TOKEN": intro},
    )  # fmt: skip
    try:
        with httpx.Client(base_url=base, timeout=10, headers=headers) as http:
            nodes = wait(
                "simulated nodes ready",
                lambda: [n["ID"] for n in http.get("/v1/nodes").json() if n["Status"] == "ready"] or None,
            )
            wait("every simulated node", lambda: len(http.get("/v1/nodes").json()) == NODES)
            r = http.put("/v1/jobs", json=job_json("web", 3, rolling=False))
            assert r.status_code == 200, r.text
            allocs = wait(
                "3 allocs placed and running",
                lambda: (
                    a
                    if len(a := http.get("/v1/job/web/allocations").json()) == 3
                    and all(x["ClientStatus"] == "running" for x in a)
                    else None
                ),
            )
            assert {a["NodeID"] for a in allocs} <= {f"ct-{i:05d}" for i in range(NODES)}
            assert all(a["NodeID"] for a in allocs), nodes
            [evaluation] = http.get("/v1/job/web/evaluations").json()
            assert evaluation["Status"] == "complete" and not evaluation.get("FailedTGAllocs")
            # A variable: the API seals it with the keyring on its volume, and reads it back.
            r = http.put("/v1/var/app/config", json={"Items": {"db": "s3cr3t"}})
            assert r.status_code == 200, r.text
            assert http.get("/v1/var/app/config").json()["Items"] == {"db": "s3cr3t"}
    finally:
        sim.send_signal(signal.SIGINT)
        try:
            sim.wait(10)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
        log.close()


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
    # Every password the file names is an interpolation (`${VAR:?...}`), an alias of one, or
    # left to the server's environment (`$$VAR`): none is written in it.
    lines = [
        line
        for line in (DEPLOY / "docker-compose.yml").read_text().splitlines()
        if not line.lstrip().startswith("#")
    ]
    values = [m.group(1) for line in lines if (m := re.search(r"(?i)password[\w-]*\"?\s*:\s*(.+)$", line))]
    assert len(values) >= 5
    assert all(re.match(r"(&[\w-]+ )?\$\{\w+:\?|\*[\w-]+$|\$\$\w+", v) for v in values), values
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
    # NATS wants its user: the password from its environment, not written in its configuration.
    nats = services["nats"]
    assert nats["environment"]["NATS_PASSWORD"] == passwords["DROVER_NATS_PASSWORD"]
    assert [c["target"] for c in nats["configs"]] == [nats["command"][-1]]
    content = config["configs"][nats["configs"][0]["source"]]["content"]
    assert "authorization" in content and "NATS_PASSWORD" in content
    assert passwords["DROVER_NATS_PASSWORD"] not in content
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == passwords["DROVER_POSTGRES_PASSWORD"]


def report_logs(compose: Any, secret: str) -> None:
    """The services' logs, for a failure's report, the password masked."""
    try:
        out, err = compose.get_logs()
    except Exception as e:  # the stack may be gone with what failed
        out, err = "", f"(no logs: {e})"
    print((out + err).replace(secret, "***")[-20000:], file=sys.stderr)
