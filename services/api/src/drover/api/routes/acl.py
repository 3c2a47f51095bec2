"""/v1/acl: the bootstrap, policies and tokens, in Nomad's JSON (command/agent/acl_endpoint.go).
With ACLs off (Nomad's default) every one answers 400 "ACL support disabled".

A token's SecretID is made here, hashed and sealed with the keyring before a command sees it
(drover.model.acl.TokenSecret), and opened only to answer its holder or a manager. What a
request may do was checked before its handler runs (drover.api.access); the handlers show a
token what it may see of the lists and of itself (drover.api.aclguard.identity).

The bootstrap may run once; again only while `<data_dir>/acl-bootstrap-reset` holds the
position of the last (Nomad's reset file, read at each call), which the answer to a refused
bootstrap names: "ACL bootstrap already done (reset index: N)"."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.acl import PolicyError, parse, rules_json
from drover.api.aclguard import identity
from drover.api.aclresolve import AclResolver, is_uuid
from drover.api.deps import BlockingDep, CommandsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered, filtered_paged
from drover.api.requestmodels import ACLBootstrapBody, ACLPolicyBody, ACLTokenBody
from drover.control.commands import acl as commands
from drover.control.errors import Invalid
from drover.model.acl import ACLToken, TokenSecret, anonymous_token
from drover.model.durations import SECOND, parse_duration
from drover.model.events import ACLBootstrapped, ACLTokenUpserted
from drover.model.state import InMemoryState
from drover.model.timefmt import parse_time_ns
from drover.runtime.keyring import Keyring
from drover.runtime.settings import Settings

router = APIRouter(route_class=JsonRoute, tags=["acl"])
RESET_FILE = "acl-bootstrap-reset"
_RESET_INDEX = re.compile(r"^\s*(\d+)")


def _enabled(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    if not settings.acl_enabled:
        raise ApiError(400, "ACL support disabled")
    return settings


def _keyring(request: Request) -> Keyring:
    keyring: Keyring = request.app.state.keyring
    return keyring


def _written(request: Request, body: Any, index: int) -> Response:
    """A write's answer: its JSON (none for a policy's), with the log position it wrote at,
    after which this process resolves no token from what it read before."""
    resolver: AclResolver = request.app.state.acl
    resolver.note_change(index)
    content = b"" if body is None else json.dumps(body).encode()
    media = "application/json" if body is not None else None
    return Response(content, media_type=media, headers={"X-Nomad-Index": str(index)})


def reset_index(settings: Settings) -> int:
    """The index the operator's reset file names (Nomad's `%d` of its start), 0 without one."""
    try:
        m = _RESET_INDEX.match((Path(settings.data_dir) / RESET_FILE).read_text())
    except (OSError, UnicodeDecodeError):
        return 0
    return int(m.group(1)) if m else 0


def _secret(keyring: Keyring, accessor_id: str, secret_id: str) -> TokenSecret:
    return TokenSecret(
        accessor_id, keyring.secret_hash(secret_id), keyring.seal_secret(accessor_id, secret_id)
    )


def _stamped(event: ACLBootstrapped | ACLTokenUpserted, before: ACLToken | None, index: int) -> ACLToken:
    """The token as the event wrote it at `index` (the reducer, on what it read)."""
    state = InMemoryState()
    if before is not None:
        state.upsert_acl_token(before)
    event.apply_to(state, index)
    written = state.acl_token(event.token.accessor_id)
    assert written is not None
    return written


# --- the bootstrap ---
@router.put("/v1/acl/bootstrap")
@router.post("/v1/acl/bootstrap")
async def bootstrap(
    request: Request, commands_: CommandsDep, body: ACLBootstrapBody | None = None
) -> Response:
    settings = _enabled(request)
    keyring = _keyring(request)
    given = body.bootstrap_secret if body is not None else ""
    if given and not is_uuid(given):
        raise ApiError(400, "invalid acl token")
    secret_id = given or str(uuid.uuid4())
    secret = await asyncio.to_thread(_secret, keyring, str(uuid.uuid4()), secret_id)
    reset = await asyncio.to_thread(reset_index, settings)
    change, positions = await commands_.run(
        lambda reads: commands.bootstrap(reads, secret, reset, time.time_ns()), what="ACL bootstrapped"
    )
    event = change.events[0].event
    assert isinstance(event, ACLBootstrapped)
    token = _stamped(event, None, positions[-1])
    return _written(request, token.api_form(secret_id), positions[-1])


# --- policies ---
@router.get("/v1/acl/policies")
async def list_policies(request: Request, blocking: BlockingDep, prefix: str = "") -> Response:
    """Every policy for a management token; a client token's own (Nomad's ListPolicies)."""
    _enabled(request)
    who = identity(request)
    keep = filtered(request)

    def fn() -> list[dict[str, Any]]:
        found = blocking.reads.acl_policies(prefix)
        if who is not None and not who.acl.is_management():
            found = [p for p in found if who.holds_policy(p.name)]
        return keep([p.stub() for p in found])

    return await blocking.read(request, fn, ["acl_policies"])


@router.get("/v1/acl/policy/{name}")
async def read_policy(name: str, request: Request, blocking: BlockingDep) -> Response:
    _enabled(request)

    def fn() -> Any:
        policy = blocking.reads.acl_policy(name)
        if policy is None:
            raise ApiError(404, "ACL policy not found")
        try:
            parsed: Any = rules_json(parse(policy.rules, strict=False))
        except PolicyError:
            parsed = None
        return policy.api_form(parsed)

    return await blocking.read(request, fn, ["acl_policies"])


@router.put("/v1/acl/policy/{name}")
@router.post("/v1/acl/policy/{name}")
async def write_policy(name: str, request: Request, commands_: CommandsDep, body: ACLPolicyBody) -> Response:
    _enabled(request)
    if body.name != name:
        raise ApiError(400, "ACL policy name does not match request path")
    _, positions = await commands_.run(
        lambda reads: commands.upsert_policy(reads, name, body.description, body.rules),
        what=f"ACL policy {name} written",
    )
    return _written(request, None, positions[-1])


@router.delete("/v1/acl/policy/{name}")
async def delete_policy(name: str, request: Request, commands_: CommandsDep) -> Response:
    _enabled(request)
    _, positions = await commands_.run(lambda reads: commands.delete_policy(reads, name))
    return _written(request, None, positions[-1])


# --- tokens ---
@router.get("/v1/acl/tokens")
async def list_tokens(request: Request, blocking: BlockingDep, prefix: str = "") -> Response:
    """Every token's stub (no SecretID), by AccessorID, paged as Nomad's lists are."""
    _enabled(request)
    # The filter judges the stub: a SecretID is never in what it sees.
    fn = filtered_paged(
        request,
        lambda start, limit: blocking.reads.acl_tokens(prefix, start=start, limit=limit),
        lambda token: str(token.accessor_id),
        shape=lambda found: [t.stub() for t in found],
    )
    return await blocking.read(request, fn, ["acl_tokens"])


def _request(body: ACLTokenBody) -> commands.TokenRequest:
    """The token the body asks for, its expiry read as Nomad reads it."""
    problems = []
    if body.roles:
        problems.append("ACL roles are not supported: name policies")
    ttl = 0
    try:
        ttl = parse_duration(body.expiration_ttl) if body.expiration_ttl not in (None, "") else 0
    except ValueError as e:
        problems.append(f"ExpirationTTL: {e}")
    expires = 0
    try:
        expires = parse_time_ns(body.expiration_time) if body.expiration_time is not None else 0
    except ValueError as e:
        problems.append(f"ExpirationTime: {e}")
    if problems:
        raise Invalid.of(problems)
    return commands.TokenRequest(
        accessor_id=body.accessor_id,
        name=body.name,
        type=body.type,
        policies=list(body.policies),
        global_=body.global_,
        expiration_time=expires,
        expiration_ttl=ttl,
    )


async def _upsert_token(request: Request, commands_: CommandsDep, body: ACLTokenBody) -> Response:
    settings = _enabled(request)
    keyring = _keyring(request)
    token_request = _request(body)
    limits = commands.TokenLimits(
        int(settings.acl_token_min_expiration_ttl * SECOND),
        int(settings.acl_token_max_expiration_ttl * SECOND),
    )
    if not body.accessor_id:
        accessor_id, secret_id = str(uuid.uuid4()), str(uuid.uuid4())
    else:
        # An update keeps the token's secret; an import (both IDs given, as UUIDs) brings its own.
        accessor_id, secret_id = body.accessor_id, body.secret_id
    secret = None
    if not body.accessor_id or (is_uuid(body.accessor_id) and is_uuid(body.secret_id)):
        secret = await asyncio.to_thread(_secret, keyring, accessor_id, secret_id)

    before: list[ACLToken | None] = [None]

    def decide(reads: Any) -> commands.AclChange:
        before[0] = reads.acl_token(token_request.accessor_id) if token_request.accessor_id else None
        return commands.upsert_token(reads, token_request, secret, time.time_ns(), limits)

    change, positions = await commands_.run(decide, what="ACL token written")
    event = change.events[0].event
    assert isinstance(event, ACLTokenUpserted)
    token = _stamped(event, before[0], positions[-1])
    shown = await asyncio.to_thread(_open, keyring, token)
    return _written(request, token.api_form(shown), positions[-1])


def _open(keyring: Keyring, token: ACLToken) -> str:
    assert token.sealed_secret is not None
    return keyring.open_secret(token.accessor_id, token.sealed_secret)


@router.put("/v1/acl/token")
@router.post("/v1/acl/token")
async def create_token(request: Request, commands_: CommandsDep, body: ACLTokenBody) -> Response:
    return await _upsert_token(request, commands_, body)


@router.get("/v1/acl/token/self")
async def read_self(request: Request, blocking: BlockingDep) -> Response:
    """The caller's token (the anonymous one without a token)."""
    _enabled(request)
    who = identity(request)
    keyring = _keyring(request)

    def fn() -> Any:
        if who is None or who.token is None:
            return anonymous_token()
        token = blocking.reads.acl_token(who.token.accessor_id)
        if token is None:  # deleted since the request's token was resolved
            raise ApiError(403, "Permission denied")
        return token.api_form(_open(keyring, token))

    return await blocking.read(request, fn, ["acl_tokens"])


@router.get("/v1/acl/token/{accessor_id}")
async def read_token(accessor_id: str, request: Request, blocking: BlockingDep) -> Response:
    _enabled(request)
    keyring = _keyring(request)

    def fn() -> Any:
        token = blocking.reads.acl_token(accessor_id)
        if token is None:
            raise ApiError(404, "ACL token not found")
        return token.api_form(_open(keyring, token))

    return await blocking.read(request, fn, ["acl_tokens"])


@router.put("/v1/acl/token/{accessor_id}")
@router.post("/v1/acl/token/{accessor_id}")
async def update_token(
    accessor_id: str, request: Request, commands_: CommandsDep, body: ACLTokenBody
) -> Response:
    _enabled(request)
    if body.accessor_id != accessor_id:
        raise ApiError(400, "ACL token accessor does not match request path")
    return await _upsert_token(request, commands_, body)


@router.delete("/v1/acl/token/{accessor_id}")
async def delete_token(accessor_id: str, request: Request, commands_: CommandsDep) -> Response:
    _enabled(request)
    _, positions = await commands_.run(
        lambda reads: commands.delete_token(reads, accessor_id), what=f"ACL token {accessor_id} deleted"
    )
    return _written(request, None, positions[-1])
