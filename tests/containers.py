"""Docker for the tests: the engine, the images built here (deploy/images), and testcontainers'
settings for this machine.

A machine without a Docker engine skips the docker tests with the reason; under `CI=true`
they fail instead, so CI never passes by skipping them. No registry is reachable: every image
a test runs is built here by `deploy.images` (cached by content, so seconds when up to date).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

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


def docker_client() -> Any:
    """The engine's client; skips the test without one (fails it under CI=true)."""
    client, why = _engine()
    if client is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true and {why}: the docker tests must run", pytrace=False)
        pytest.skip(why)
    return client


def images(*names: str) -> dict[str, str]:
    """The named images of deploy/images, built if missing or stale; their tags."""
    docker_client()
    from deploy.images import ensure

    return ensure(names, say=lambda line: print(line, file=sys.stderr))
