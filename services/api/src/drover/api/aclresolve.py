"""Who a request is: its token (X-Nomad-Token, else `Authorization: Bearer`) resolved to its
ACL, as Nomad's authenticator resolves it. No token is the anonymous token, whose ACL is what
the policy named `anonymous` grants (nothing without one); a token that is not a UUID, unknown
or expired is refused, never taken as anonymous.

Tokens are looked up by their secret's keyed hash (drover.runtime.keyring) and cached by it
with the ACL their policies make; a cached entry holds while no ACL policy or token changed
after the log position it was read at (the `acl` key of the commits' notifications,
drover.runtime.watches), so a request costs a hash and two dict lookups. Unknown tokens are
not cached: one just created on another API process resolves at once.

A secret that is no ACL token but a registered node's SecretID (drover.api.nodeauth) is that
node's client: as Nomad's clients read with their node secret, it holds CLIENT_POLICY (what an
agent reads: its allocs, their jobs, the services and variables its templates watch) and
node:write for Drover's client routes, where each call is then checked against its nodes."""

from __future__ import annotations

import asyncio
import hmac
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from drover.acl import ACL, MANAGEMENT, Policy, PolicyError, compile_acl, parse
from drover.model.acl import ANONYMOUS_POLICY, ACLPolicy, ACLToken
from drover.runtime.keyring import Keyring
from drover.runtime.store.queries import Reads
from drover.runtime.watches import ACL_KEY, ChangeIndex

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Objects whose namespace is looked up by ID (it never changes), and how many are remembered.
_NAMESPACE_TABLES = {"alloc": "allocs", "eval": "evals", "deployment": "deployments"}
NAMESPACES_KEPT = 100_000
TOKENS_KEPT = 10_000
# What a node's secret grants its client (the agent's reads, and its own client routes).
CLIENT_POLICY = """
namespace "*" {
  policy = "read"
  variables {
    path "*" { capabilities = ["read", "list"] }
  }
}
node { policy = "write" }
"""
# Seconds a secret found to be a node's is trusted before it is looked up again.
NODE_SECRET_TTL = 60.0


def is_uuid(text: str) -> bool:
    return _UUID.match(text) is not None


def token_from(headers: list[tuple[bytes, bytes]]) -> str:
    """The request's token, "" without one (Nomad's parseToken: X-Nomad-Token, trimmed, else
    the value of an `Authorization: Bearer` header; another scheme is no token)."""
    bearer = ""
    for name, value in headers:
        if name == b"x-nomad-token":
            token = value.decode("latin-1").strip()
            if token:
                return token
        elif name == b"authorization":
            scheme, _, rest = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer":
                bearer = rest.strip()
    return bearer


@dataclass(frozen=True)
class Identity:
    """A request's resolved token: its ACL, and the token (None: the anonymous token)."""

    acl: ACL
    token: ACLToken | None = None
    # A node's client, by its node secret (no ACL token).
    node: bool = False

    def holds_policy(self, name: str) -> bool:
        if self.token is None:
            return name == ANONYMOUS_POLICY
        return name in self.token.policies


@dataclass(frozen=True)
class _Entry:
    index: int
    token: ACLToken
    acl: ACL


class AclResolver:
    def __init__(
        self,
        reads: Reads,
        keyring: Keyring,
        changes: ChangeIndex,
        node_secret_hash: Callable[[str], str] | None = None,
    ) -> None:
        self.reads = reads
        self.keyring = keyring
        self.changes = changes
        # The node secrets' keyed hash (drover.api.nodeauth), and the secrets found to be a
        # node's (by their ACL digest) with when.
        self.node_secret_hash = node_secret_hash
        self._node_secrets: OrderedDict[str, float] = OrderedDict()
        self._client = Identity(compile_acl([parse(CLIENT_POLICY)]), node=True)
        self._tokens: OrderedDict[str, _Entry] = OrderedDict()
        self._anonymous: tuple[int, ACL] | None = None
        # Parsed policies by (name, ModifyIndex): parsed once however many tokens name them.
        self._parsed: dict[tuple[str, int], Policy] = {}
        self._namespaces: OrderedDict[tuple[str, str], str] = OrderedDict()
        # The last ACL change this process made itself (known before its notification comes).
        self._written = 0

    def _current(self, index: int) -> bool:
        return index >= self._written and self.changes.last_change(ACL_KEY) <= index

    def note_change(self, position: int) -> None:
        """An ACL policy or token this process wrote at `position`: what was read before it is
        stale from now on, not from when the commit's notification comes back."""
        self._written = max(self._written, position)

    async def resolve(self, secret: str, *, fresh: bool = False) -> Identity | None:
        """The identity of a request carrying `secret` ("" for none), None if refused.
        `fresh`: read again whatever is cached (a stream re-checked on an ACL change, which
        may be told of it before this process' notification is)."""
        if not secret:
            anonymous = self._anonymous
            if anonymous is None or fresh or not self._current(anonymous[0]):
                anonymous = self._anonymous = await asyncio.to_thread(self._load_anonymous)
            return Identity(anonymous[1])
        if not is_uuid(secret):
            return None
        digest = self.keyring.secret_hash(secret)
        if self._is_known_node(digest):
            # A node's secret (its heartbeats, its agent's reads) never asks for a token first.
            return self._client
        entry = self._tokens.get(digest)
        if entry is None or fresh or not self._current(entry.index):
            found = await asyncio.to_thread(self._load_token, digest)
            if found is None:
                self._tokens.pop(digest, None)
                return await self._node_client(secret, digest)
            entry = self._remember(digest, found)
        if not hmac.compare_digest(entry.token.secret_hash, digest) or entry.token.expired(time.time_ns()):
            return None
        return Identity(entry.acl, entry.token)

    def _is_known_node(self, digest: str) -> bool:
        seen = self._node_secrets.get(digest)
        return seen is not None and time.monotonic() - seen <= NODE_SECRET_TTL

    async def _node_client(self, secret: str, digest: str) -> Identity | None:
        """The client identity if `secret` is a registered node's, else None (refused)."""
        if self.node_secret_hash is None:
            return None
        if not self._is_known_node(digest):
            registered = await asyncio.to_thread(self.reads.secret_registered, self.node_secret_hash(secret))
            if not registered:
                self._node_secrets.pop(digest, None)
                return None
            self._node_secrets[digest] = time.monotonic()
            self._node_secrets.move_to_end(digest)
            while len(self._node_secrets) > TOKENS_KEPT:
                self._node_secrets.popitem(last=False)
        return self._client

    def _remember(self, digest: str, entry: _Entry) -> _Entry:
        self._tokens[digest] = entry
        self._tokens.move_to_end(digest)
        while len(self._tokens) > TOKENS_KEPT:
            self._tokens.popitem(last=False)
        return entry

    def _load_anonymous(self) -> tuple[int, ACL]:
        index = self.reads.index()
        return index, self._acl_of(self.reads.acl_policies_named([ANONYMOUS_POLICY]))

    def _load_token(self, digest: str) -> _Entry | None:
        index = self.reads.index()  # first: what is read is at least as new
        token = self.reads.acl_token_by_hash(digest)
        if token is None:
            return None
        if token.is_management():
            return _Entry(index, token, MANAGEMENT)
        return _Entry(index, token, self._acl_of(self.reads.acl_policies_named(token.policies)))

    def _acl_of(self, policies: list[ACLPolicy]) -> ACL:
        """The ACL the policies make, each parsed leniently (as stored policies are applied);
        one that no longer parses grants nothing."""
        parsed = []
        for p in policies:
            key = (p.name, p.modify_index)
            if key not in self._parsed:
                if len(self._parsed) >= TOKENS_KEPT:
                    self._parsed.clear()  # versions no token names any more pile up otherwise
                try:
                    self._parsed[key] = parse(p.rules, strict=False)
                except PolicyError:
                    self._parsed[key] = Policy()
            parsed.append(self._parsed[key])
        return compile_acl(parsed)

    async def namespace_of(self, kind: str, object_id: str) -> str | None:
        """The namespace of an alloc, eval or deployment (None: there is none of that ID)."""
        key = (kind, object_id)
        found = self._namespaces.get(key)
        if found is None:
            found = await asyncio.to_thread(self._read_namespace, _NAMESPACE_TABLES[kind], object_id)
            if found is None:
                return None
            self._namespaces[key] = found
            while len(self._namespaces) > NAMESPACES_KEPT:
                self._namespaces.popitem(last=False)
        return found

    def _read_namespace(self, table: str, object_id: str) -> str | None:
        rows = self.reads._docs(f"SELECT namespace FROM {table} WHERE id = :id", id=object_id)
        return rows[0] if rows else None
