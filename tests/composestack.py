"""What the compose tests share (tests/test_compose.py: deploy/docker-compose.yml;
tests/test_compose_ha.py: deploy/docker-compose.ha.yml): the stack's env file and `docker
compose` set up for one test, its life under testcontainers' DockerCompose with each service's
logs reported on a failure, the stack up as its file says, the operator's ACL bootstrap, `drover sim`'s nodes registering
through the API, and what a project leaves behind."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from drover.runtime.embedded import free_port

from .cluster import job_json
from .containers import LOOPBACK, docker_client, docker_config_with_compose, images

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
PROJECT_LABEL = "com.docker.compose.project"
# A failure's report: the end of each service's log, so that one chatty service cannot push
# another's reason out of it.
LOG_TAIL = 6000
SECRETS = ("DROVER_POSTGRES_PASSWORD", "DROVER_NATS_PASSWORD")
T = TypeVar("T")


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


def nats_password() -> str:
    """A random password that looks like a number, the hardest case: NATS reads `$NATS_PASSWORD`
    as a value of its configuration, and one like `12345` or `1e5...` (as a hex token sometimes
    is) made the server exit until the compose files quoted it (`x-nats-password-quoted`)."""
    return "".join(secrets.choice("0123456789") for _ in range(32))


def stack_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The stack's env file (the local images, random passwords, a project name and a free
    port of the test's own), and `docker compose` set up for this test alone; `env_file` is
    the file's path."""
    built = images("python", "nats", "postgres")
    monkeypatch.setenv("DOCKER_CONFIG", str(docker_config_with_compose(tmp_path / "docker")))
    project = f"drover-test-{secrets.token_hex(4)}"
    env = {
        "COMPOSE_PROJECT_NAME": project,
        "DROVER_POSTGRES_PASSWORD": secrets.token_hex(16),
        "DROVER_NATS_PASSWORD": nats_password(),
        "DROVER_API_PORT": str(free_port()),
        "DROVER_PYTHON_IMAGE": built["python"],
        "DROVER_NATS_IMAGE": built["nats"],
        "DROVER_POSTGRES_IMAGE": built["postgres"],
        # An image of the project's own (removed after), its layers from the build cache.
        "DROVER_IMAGE": f"drover:{project}",
    }
    path = tmp_path / "stack.env"
    path.touch(mode=0o600)
    path.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    env["env_file"] = str(path)
    return env


@contextlib.contextmanager
def compose_up(file_name: str, env: dict[str, str]) -> Iterator[Any]:
    """`up --build --wait` of the file; after the test, no password in any service's log; on any
    failure (`up`'s too), each service's logs, the passwords masked; `down --volumes` and the
    project's image removed whatever happened, and then nothing of the project left."""
    from testcontainers.compose import DockerCompose

    project = env["COMPOSE_PROJECT_NAME"]
    compose = DockerCompose(
        DEPLOY, compose_file_name=file_name, env_file=env["env_file"], build=True, wait=True
    )
    started = time.monotonic()
    try:
        compose.start()
        print(f"{project}: built and up in {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield compose
        # No password in any service's log.
        logs = "".join(compose.get_logs())
        assert [n for n in SECRETS if env[n] in logs] == []
    except BaseException:
        report_logs(compose, [env[n] for n in SECRETS])
        raise
    finally:
        try:
            compose.stop()
        finally:
            print(f"{project}: {time.monotonic() - started:.1f} s in all, down included", file=sys.stderr)
            remove_project_images(project)
    assert project_leftovers(project) == []


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


def masked(text: str, secrets_: list[str]) -> str:
    for secret in secrets_:
        text = text.replace(secret, "***")
    return text


def service_logs(compose: Any, services: list[str], tail: int = LOG_TAIL) -> str:
    """Each service's logs under a heading of its own, each cut to its last `tail` characters."""
    parts = []
    for service in services:
        try:
            out, err = compose.get_logs(service)
        except Exception as e:  # the stack may be gone with what failed
            out, err = "", f"(no logs: {e})"
        text = out + err
        cut = f"[... {len(text) - tail} characters before]\n" if len(text) > tail else ""
        parts.append(f"---- {service} ----\n{cut}{text[-tail:]}")
    return "\n".join(parts)


def report_logs(compose: Any, secrets_: list[str]) -> None:
    """The services' logs, for a failure's report: each service's own tail, the passwords
    masked, and each container's state (a container that exited says why in its own log)."""
    try:
        services = list(compose.get_config()["services"])
    except Exception as e:
        print(f"(no services: {e})", file=sys.stderr)
        return
    with contextlib.suppress(Exception):
        states = [f"{c.Name}: {c.State} {c.Status}" for c in compose.get_containers(include_all=True)]
        print("---- containers ----\n" + "\n".join(states), file=sys.stderr)
    print(masked(service_logs(compose, services), secrets_), file=sys.stderr)


def check_up(compose: Any, env: dict[str, str], replicas: dict[str, int]) -> None:
    """The stack as its file says: the API published on loopback alone at the env file's port,
    each service running with its replicas, and migrate exited 0."""
    assert compose.get_service_host_and_port("api", 4646) == (LOOPBACK, int(env["DROVER_API_PORT"]))
    running = Counter(c.Service for c in compose.get_containers() if c.State == "running")
    assert running == replicas
    assert compose.get_container("migrate", include_all=True).ExitCode == 0


def bootstrap(base: str) -> tuple[str, str]:
    """ACLs are on in the compose files: the operator bootstraps (the root token), then makes a
    node:write token for the simulator's nodes (Nomad's node introduction). Anonymous gets
    nothing meanwhile."""
    root = httpx.post(f"{base}/v1/acl/bootstrap", timeout=10).json()["SecretID"]
    headers = {"X-Nomad-Token": root}
    assert httpx.get(f"{base}/v1/nodes", timeout=10).status_code == 403
    rules = {"Name": "nodes", "Rules": 'node { policy = "write" }'}
    httpx.put(f"{base}/v1/acl/policy/nodes", json=rules, headers=headers, timeout=10).raise_for_status()
    intro = httpx.post(f"{base}/v1/acl/token", json={"Type": "client", "Policies": ["nodes"]}, headers=headers,
                       timeout=10).json()["SecretID"]  # fmt: skip
    return root, intro


@contextlib.contextmanager
def simulated_nodes(base: str, token: str, count: int, prefix: str, tmp_path: Path) -> Iterator[None]:
    """`drover sim`'s `count` nodes registering through the API at `base` with `token`, stopped
    (Ctrl-C) after."""
    log = (tmp_path / "sim.log").open("wb")
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", base, "--nodes", str(count), "--prefix", prefix,
         "--data-dir", str(tmp_path / "sim")],
        stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "DROVER_CLIENT_TOKEN": token},
    )  # fmt: skip
    try:
        yield
    finally:
        sim.send_signal(signal.SIGINT)
        try:
            sim.wait(10)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
        log.close()


def register(http: httpx.Client, job_id: str, count: int, timeout: float = 60.0) -> None:
    """Register a job of `count` mock tasks, again until the API takes it (it answers 503 while
    its database is out of reach)."""

    def registered() -> bool:
        r = http.put("/v1/jobs", json=job_json(job_id, count, rolling=False))
        assert r.status_code in (200, 500, 502, 503), r.text
        return r.status_code == 200

    wait(f"job {job_id} registered", registered, timeout)


def running_allocs(
    http: httpx.Client, job_id: str, count: int, timeout: float = 60.0
) -> list[dict[str, Any]]:
    """The job's allocs once there are `count`, every one running."""

    def running() -> list[dict[str, Any]] | None:
        r = http.get(f"/v1/job/{job_id}/allocations")
        allocs = r.json() if r.status_code == 200 else []
        return (
            allocs if len(allocs) == count and all(a["ClientStatus"] == "running" for a in allocs) else None
        )

    return wait(f"{count} allocs of {job_id} placed and running", running, timeout)


def api_base(env: dict[str, str]) -> str:
    return f"http://{LOOPBACK}:{env['DROVER_API_PORT']}"
