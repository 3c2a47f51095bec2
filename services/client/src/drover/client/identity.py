"""A client's identity with the servers: its node secret (Nomad's Node.SecretID), made once
and kept in the client's data directory (mode 0600) so that the node, after a restart, is
still the one that registered, and sent on every request to the servers."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Generator, Mapping
from pathlib import Path

import httpx

REGISTER_PATH = "/v1/drover/node/register"


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
    """Sends the node secret in X-Nomad-Token on every request, as Nomad's client authenticates
    its RPCs with it: Drover's client endpoints check it against the nodes it speaks for, and
    with ACLs on it reads what the agent reads (drover.api.aclresolve). Registering a node
    anew takes an ACL token with node:write instead (Nomad's node introduction): the
    `intro_token`, where one is given (DROVER_CLIENT_TOKEN, else NOMAD_TOKEN)."""

    def __init__(self, secret: str, intro_token: str = "") -> None:
        self.secret = secret
        self.intro_token = intro_token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if "X-Nomad-Token" not in request.headers:  # one the caller chose stands
            token = (
                self.intro_token if self.intro_token and request.url.path == REGISTER_PATH else self.secret
            )
            request.headers["X-Nomad-Token"] = token
        yield request


def intro_token(environ: Mapping[str, str]) -> str:
    """The ACL token a client registers its nodes with (node:write), "" for none."""
    return (environ.get("DROVER_CLIENT_TOKEN") or environ.get("NOMAD_TOKEN") or "").strip()
