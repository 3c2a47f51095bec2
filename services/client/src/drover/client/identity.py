"""A client's identity with the servers: its node secret (Nomad's Node.SecretID), made once
and kept in the client's data directory (mode 0600) so that the node, after a restart, is
still the one that registered, and sent on every request to Drover's client endpoints."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Generator
from pathlib import Path

import httpx

CLIENT_PATHS = "/v1/drover/"


def load_or_create_secret(path: Path) -> str:
    """The secret kept in `path`, made (a random UUID) and written whole first if absent."""
    with contextlib.suppress(FileNotFoundError):
        if secret := path.read_text().strip():
            return secret
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = str(uuid.uuid4())
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return secret


class NodeSecretAuth(httpx.Auth):
    """Sends the node secret in X-Nomad-Token on Drover's client endpoints (/v1/drover/...),
    as Nomad's client authenticates its RPCs with it. The client's other calls (the public
    API: its allocs, job versions, a template's data) go without it: there the header is a
    user's ACL token."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if request.url.path.startswith(CLIENT_PATHS):
            request.headers["X-Nomad-Token"] = self.secret
        yield request
