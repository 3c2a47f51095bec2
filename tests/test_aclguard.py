"""The ACL check around an endpoint, without servers: the token read from the headers as Nomad
reads it, each kind of capability an entry may name (those today's routes do not use too), the
?purge variant, and a refusal answered before the endpoint runs."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from drover.api.access import ROUTES, Need, need
from drover.api.aclguard import guarded
from drover.api.aclresolve import AclResolver, token_from
from drover.model.acl import ACLPolicy, ACLToken
from drover.runtime.keyring import Keyring
from drover.runtime.watches import ChangeIndex

RULES = """
namespace "web" { policy = "read" }
namespace "ops" { capabilities = ["purge-job"] }
quota { policy = "read" }
plugin { policy = "list" }
node_pool "gpu-*" { policy = "write" }
"""


class _Reads:
    def __init__(self, tokens: dict[str, ACLToken]) -> None:
        self.tokens = tokens

    def index(self) -> int:
        return 1

    def acl_token_by_hash(self, digest: str) -> ACLToken | None:
        return self.tokens.get(digest)

    def acl_policies_named(self, names: list[str]) -> list[ACLPolicy]:
        return [ACLPolicy(name="p", rules=RULES)] if "p" in names else []


@pytest.fixture
def check(tmp_path: Path) -> Any:
    keyring = Keyring(tmp_path / "keyring.json")
    secret = str(uuid.uuid4())
    digest = keyring.secret_hash(secret)
    resolver = AclResolver(
        _Reads({digest: ACLToken(accessor_id="a", policies=["p"], secret_hash=digest)}),  # type: ignore[arg-type]
        keyring,
        ChangeIndex(),
    )

    def run(n: Need, query: bytes = b"", params: dict[str, str] | None = None) -> int:
        ran: list[bool] = []
        sent: list[dict[str, Any]] = []

        async def endpoint(scope: Any, receive: Any, send: Any) -> None:
            ran.append(True)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": "GET", "query_string": query, "path_params": params or {},
                 "headers": [(b"x-nomad-token", secret.encode())]}  # fmt: skip
        asyncio.run(guarded(endpoint, n, resolver, 1 << 20)(scope, receive, send))
        if ran:
            return 200
        assert sent[0]["status"] == 403 and sent[1]["body"] == b"Permission denied"
        return 403

    return run


@pytest.mark.parametrize(
    ("entry", "query", "params", "status"),
    [
        (need("namespace:read-job"), b"namespace=web", {}, 200),
        (need("namespace:read-job"), b"", {}, 403),  # the default namespace
        (need("namespace:submit-job"), b"namespace=web", {}, 403),
        (need("namespace:any"), b"namespace=web", {}, 200),
        (need("namespace:any"), b"namespace=other", {}, 403),
        (need("namespace:read-job"), b"namespace=%2A", {}, 200),  # `*`: some namespace grants it
        (need("quota:read"), b"", {}, 200),
        (need("quota:write"), b"", {}, 403),
        (need("plugin:list"), b"", {}, 200),
        (need("plugin:read"), b"", {}, 403),
        (need("node_pool:write"), b"", {"name": "gpu-a"}, 200),
        (need("node_pool:write"), b"", {"node_pool": "cpu"}, 403),
        (need("node:read"), b"", {}, 403),
        (need("management"), b"", {}, 403),
        (need("token"), b"", {}, 200),
        (need("namespace:read-job+quota:write"), b"namespace=web", {}, 403),
        (need("namespace:submit-job", "quota:read"), b"namespace=web", {}, 200),
        # A job's DELETE: deregister-job or purge-job, with ?purge=true purge-job only.
        (ROUTES[("DELETE", "/v1/job/{job_id:path}")], b"namespace=ops", {"job_id": "x"}, 200),
        (ROUTES[("DELETE", "/v1/job/{job_id:path}")], b"namespace=ops&purge=true", {"job_id": "x"}, 200),
        (ROUTES[("DELETE", "/v1/job/{job_id:path}")], b"namespace=web&purge=true", {"job_id": "x"}, 403),
    ],
)
def test_each_kind_of_capability(
    check: Any, entry: Need, query: bytes, params: dict[str, str], status: int
) -> None:
    assert check(entry, query, params) == status


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ([(b"x-nomad-token", b"  abc  ")], "abc"),
        ([(b"authorization", b"Bearer abc")], "abc"),
        ([(b"authorization", b"bearer   abc ")], "abc"),
        ([(b"authorization", b"abc")], ""),  # a bare value is no token
        ([(b"authorization", b"Basic Zm9vOmJhcg==")], ""),
        ([(b"x-nomad-token", b"one"), (b"authorization", b"Bearer two")], "one"),
        ([(b"x-nomad-token", b" "), (b"authorization", b"Bearer two")], "two"),
        ([], ""),
    ],
)
def test_the_token_is_read_as_nomad_reads_it(headers: list[tuple[bytes, bytes]], token: str) -> None:
    assert token_from(headers) == token
