"""What the ACL check adds to a request, in-process: the CPU of one route's check (token from
the headers, its keyed hash, the resolved-token cache, the capability) with a client token and
with the management token, against a route endpoint that does nothing. The issue's target is
at most 10% more API CPU per read: compare with `bench/requests.py`'s CPU per request.

    python -m bench.aclguard --out bench/out/aclguard.json [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench import report
from drover.api.access import ROUTES
from drover.api.aclguard import guarded
from drover.api.aclresolve import AclResolver
from drover.model.acl import ACLPolicy, ACLToken
from drover.runtime.keyring import Keyring
from drover.runtime.watches import ChangeIndex


class _Reads:
    """The two rows a token's resolution reads (the projections' part of `Reads`)."""

    def __init__(self, tokens: dict[str, ACLToken]) -> None:
        self.tokens = tokens

    def index(self) -> int:
        return 10

    def acl_token_by_hash(self, digest: str) -> ACLToken | None:
        return self.tokens.get(digest)

    def acl_policies_named(self, names: list[str]) -> list[ACLPolicy]:
        rules = 'namespace "default" { policy = "read" }\nnode { policy = "read" }'
        return [ACLPolicy(name="reads", rules=rules, modify_index=3)] if "reads" in names else []


async def _measure(n: int) -> dict[str, Any]:
    keyring = Keyring(Path(tempfile.mkdtemp(prefix="drover-aclguard-")) / "keyring.json")
    secrets = {"client": str(uuid.uuid4()), "management": str(uuid.uuid4())}
    tokens = {
        keyring.secret_hash(secrets["client"]): ACLToken(accessor_id="c", policies=["reads"]),
        keyring.secret_hash(secrets["management"]): ACLToken(accessor_id="m", type="management"),
    }
    for digest, token in tokens.items():
        token.secret_hash = digest
    resolver = AclResolver(_Reads(tokens), keyring, ChangeIndex(5))  # type: ignore[arg-type]

    async def endpoint(scope: Any, receive: Any, send: Any) -> None:
        pass

    out: dict[str, Any] = {}
    for route, path, params in (("node", "/v1/node/{node_id}", {"node_id": "n0"}),
                                ("job", "/v1/job/{job_id:path}", {"job_id": "web"})):  # fmt: skip
        check = guarded(endpoint, ROUTES[("GET", path)], resolver, 1 << 20)
        for who, secret in secrets.items():
            scope = {"type": "http", "method": "GET", "query_string": b"", "path_params": params,
                     "headers": [(b"host", b"api"), (b"accept", b"*/*"), (b"x-nomad-token", secret.encode())]}  # fmt: skip
            await check(dict(scope), None, None)  # resolved once, then from the cache
            t0 = time.process_time()
            for _ in range(n):
                await check(dict(scope), None, None)
            out[f"{route}_{who}"] = {"check_us_per_request": round((time.process_time() - t0) / n * 1e6, 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/aclguard.json")
    ap.add_argument("--requests", type=int, default=20000)
    args = ap.parse_args()
    result = {"benchmark": "aclguard", "requests": args.requests, **asyncio.run(_measure(args.requests))}
    report.write(result, args.out)


if __name__ == "__main__":
    main()
