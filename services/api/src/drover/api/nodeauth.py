"""Node identity on Drover's client endpoints (/v1/drover/*), as Nomad's servers authenticate
their clients (AuthenticateClientOnly): a node registers with a SecretID (`Node.SecretID` in
the body), and every later request of its client carries that secret in `X-Nomad-Token` (or
`Authorization: Bearer`), as Nomad's client sends its node secret as the request's auth token.
A request whose secret is missing, or is not the one every node it speaks for registered with,
is refused with 403 "Permission denied" before its command runs: nothing is written.

One secret may stand for many nodes: `drover sim` registers all of its nodes with one. What a
request speaks for: the nodes it names, and the nodes of the allocs and registrations it
reports on (an alloc never moves). A node the servers do not know passes here, for the
command to answer 404 (the agent then registers again); a node registered before nodes had
secrets has none to match, and is refused until it registers again.

The servers keep only a keyed hash of each secret (drover.runtime.nodesecrets); the hashes of
the nodes seen are cached here, so a heartbeat costs one HMAC and a dictionary lookup. A cached
hash is read again once it is CACHE_TTL old, or when a request's does not match it (the node
may have been purged and registered again through another API process)."""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable, Collection, Iterable
from typing import Annotated

from fastapi import Depends, Request

from drover.api.errors import ApiError
from drover.runtime.nodesecrets import NodeSecretHasher
from drover.runtime.store.queries import Reads

# Seconds a node's cached hash is trusted before it is read again: long enough that most
# heartbeats (every TTL/2, up to minutes in a large cluster) find it, short enough to bound how
# long a purged node's old secret still passes here after it registered again elsewhere.
CACHE_TTL = 300.0
PERMISSION_DENIED = "Permission denied"


def request_token(request: Request) -> str:
    """The request's token, as Nomad's agent parses it: X-Nomad-Token (trimmed), else the
    word after `Bearer` in Authorization."""
    token = request.headers.get("x-nomad-token", "").strip()
    if token:
        return token
    scheme, _, rest = request.headers.get("authorization", "").strip().partition(" ")
    return rest.strip() if scheme.lower() == "bearer" else ""


class NodeAuth:
    """The API process's check of client requests against the nodes' secret hashes."""

    def __init__(self, hasher: NodeSecretHasher, reads: Reads, ttl: float = CACHE_TTL) -> None:
        self.hasher = hasher
        self.reads = reads
        self.ttl = ttl
        # Node ID -> (its secret's hash, when read); "" for a node without one.
        self._hashes: dict[str, tuple[str, float]] = {}
        # Hashes some node registered with -> when that was last seen.
        self._known: dict[str, float] = {}

    def hash(self, secret: str) -> str:
        return self.hasher.hash(secret)

    def registered(self, node_id: str, secret_hash: str) -> None:
        """The node registered (through this process) with this hash."""
        self._hashes[node_id] = (secret_hash, time.monotonic())

    def forget(self, node_id: str) -> None:
        """The node was purged."""
        self._hashes.pop(node_id, None)

    # --- the checks ---
    def _stale(self, node_ids: Iterable[str], secret_hash: str) -> list[str]:
        """Those of `node_ids` whose cached hash is missing, too old, or not `secret_hash`."""
        now = time.monotonic()
        out = []
        for n in node_ids:
            cached = self._hashes.get(n)
            if (
                cached is None
                or now - cached[1] > self.ttl
                or not hmac.compare_digest(cached[0], secret_hash)
            ):
                out.append(n)
        return out

    def _load(self, node_ids: list[str]) -> None:
        found = self.reads.node_secret_hashes(node_ids)
        now = time.monotonic()
        for n in node_ids:
            if n in found:
                self._hashes[n] = (found[n], now)
            else:
                self._hashes.pop(n, None)  # unknown (purged meanwhile)

    def _refused(self, node_ids: Iterable[str], secret_hash: str) -> list[str]:
        """Those of `node_ids` the servers know that did not register with `secret_hash`."""
        return [
            n
            for n in node_ids
            if (cached := self._hashes.get(n)) is not None and not hmac.compare_digest(cached[0], secret_hash)
        ]

    def require_registered_now(self, secret_hash: str) -> None:
        """403 unless some node registered with `secret_hash` (reads in this thread)."""
        seen = self._known.get(secret_hash)
        if seen is not None and time.monotonic() - seen <= self.ttl:
            return
        if not self.reads.secret_registered(secret_hash):
            raise ApiError(403, PERMISSION_DENIED)
        self._known[secret_hash] = time.monotonic()

    def owned_now(self, secret_hash: str, node_ids: Collection[str]) -> set[str]:
        """Those of `node_ids` registered with `secret_hash` (reads in this thread)."""
        stale = self._stale(node_ids, secret_hash)
        if stale:
            self._load(stale)
        return {
            n
            for n in node_ids
            if (c := self._hashes.get(n)) is not None and hmac.compare_digest(c[0], secret_hash)
        }

    async def require_nodes(self, secret_hash: str, node_ids: Collection[str]) -> None:
        """403 unless every node of `node_ids` the servers know registered with `secret_hash`."""
        stale = self._stale(node_ids, secret_hash)
        if stale:  # the common case (a cached node's heartbeat) needs no thread or read
            await asyncio.to_thread(self._load, stale)
            if self._refused(stale, secret_hash):
                raise ApiError(403, PERMISSION_DENIED)

    async def require_of(
        self, secret_hash: str, ids: Collection[str], nodes_of: Callable[[list[str]], dict[str, str]]
    ) -> None:
        """403 unless the nodes of `ids` (`nodes_of`: allocs', registrations') registered
        with `secret_hash`; unknown IDs are the command's to refuse."""
        if ids:
            nodes = await asyncio.to_thread(nodes_of, list(ids))
            await self.require_nodes(secret_hash, set(nodes.values()))


class NodeCaller:
    """A client request's identity: the hash of the secret it carries, and the checks on it."""

    def __init__(self, auth: NodeAuth, secret_hash: str) -> None:
        self.auth = auth
        self.secret_hash = secret_hash

    async def require_nodes(self, node_ids: Collection[str]) -> None:
        await self.auth.require_nodes(self.secret_hash, node_ids)

    async def require_allocs(self, alloc_ids: Collection[str]) -> None:
        await self.auth.require_of(self.secret_hash, alloc_ids, self.auth.reads.alloc_nodes)

    async def require_services(self, service_ids: Collection[str]) -> None:
        await self.auth.require_of(self.secret_hash, service_ids, self.auth.reads.service_nodes)

    async def require_registered(self) -> None:
        """403 unless some node registered with the caller's secret."""
        await asyncio.to_thread(self.auth.require_registered_now, self.secret_hash)

    def owned_now(self, node_ids: Collection[str]) -> set[str]:
        """Those of `node_ids` that are the caller's (reads in this thread)."""
        return self.auth.owned_now(self.secret_hash, node_ids)


async def _node_auth(request: Request) -> NodeAuth:
    auth: NodeAuth = request.app.state.node_auth
    return auth


async def caller_of(request: Request) -> NodeCaller:
    """The caller of a client endpoint; 403 without a secret. Nomad's clients authenticate
    with their node secret, never with a user's ACL token: these routes take no ACL token."""
    secret = request_token(request)
    if not secret:
        raise ApiError(403, PERMISSION_DENIED)
    auth: NodeAuth = request.app.state.node_auth
    return NodeCaller(auth, auth.hash(secret))


NodeAuthDep = Annotated[NodeAuth, Depends(_node_auth)]
NodeCallerDep = Annotated[NodeCaller, Depends(caller_of)]
