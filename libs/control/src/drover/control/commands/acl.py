"""ACL commands (Nomad's ACL.Bootstrap, UpsertPolicies, DeletePolicies, UpsertTokens,
DeleteTokens), decided as Nomad's ACL endpoint and state store decide them. A token's secret
comes prepared (drover.model.acl.TokenSecret: hashed and sealed by the API with the keyring):
nothing here sees a SecretID.

Each write appends after the version of its stream it read (a policy's, a token's, the
bootstrap's), so two decided on one read cannot both land: a second bootstrap is decided
again, and refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from drover.acl import PolicyError, parse
from drover.control.change import Change
from drover.control.errors import Invalid
from drover.model.acl import (
    CLIENT,
    MANAGEMENT,
    MAX_POLICY_DESCRIPTION,
    MAX_TOKEN_NAME,
    POLICY_NAME,
    ACLPolicy,
    ACLToken,
    TokenSecret,
)
from drover.model.durations import format_duration
from drover.model.events import (
    ACLBootstrapped,
    ACLPolicyDeleted,
    ACLPolicyUpserted,
    ACLTokenDeleted,
    ACLTokenUpserted,
    NewEvent,
)

BOOTSTRAP_TOKEN_NAME = "Bootstrap Token"


class AclCommandReads(Protocol):
    def acl_policy(self, name: str) -> ACLPolicy | None: ...

    def acl_token(self, accessor_id: str) -> ACLToken | None: ...

    def acl_token_by_hash(self, secret_hash: str) -> ACLToken | None: ...

    def acl_policy_stream_version(self, name: str) -> int: ...

    def acl_token_stream_version(self, accessor_id: str) -> int: ...

    # (the bootstrap stream's version, its last event's position)
    def acl_bootstrap(self) -> tuple[int, int]: ...


@dataclass
class AclChange(Change):
    """The change, and the token it writes as decided (the reducer stamps its indexes)."""

    token: ACLToken | None = None


@dataclass(frozen=True)
class TokenLimits:
    """How far ahead a token's expiry may lie (Nomad's token_min/max_expiration_ttl)."""

    min_ttl: int
    max_ttl: int


@dataclass
class TokenRequest:
    """A token as a create or update request names it (Nomad's ACLToken in the body)."""

    accessor_id: str = ""
    name: str = ""
    type: str = ""
    policies: list[str] = field(default_factory=list)
    global_: bool = False
    # 0: not given.
    expiration_time: int = 0
    expiration_ttl: int = 0


def bootstrap(reads: AclCommandReads, secret: TokenSecret, reset_index: int, now: int) -> AclChange:
    """The management token of the bootstrap; once, unless `reset_index` (the operator's
    reset file; 0 without one) names the last bootstrap's position."""
    version, last = reads.acl_bootstrap()
    if version:
        if reset_index == 0:
            raise Invalid(f"ACL bootstrap already done (reset index: {last})")
        if reset_index != last:
            raise Invalid(f"Invalid bootstrap reset index (specified {reset_index}, reset index: {last})")
    if reads.acl_token_by_hash(secret.secret_hash) is not None:
        raise Invalid("invalid acl token: a token with this SecretID exists")
    token = ACLToken(
        accessor_id=secret.accessor_id,
        name=BOOTSTRAP_TOKEN_NAME,
        type=MANAGEMENT,
        global_=True,
        create_time=now,
        secret_hash=secret.secret_hash,
        sealed_secret=secret.sealed,
    )
    return AclChange(events=[NewEvent(ACLBootstrapped(token=token), version)], token=token)


def policy_problems(name: str, description: str, rules: str) -> list[str]:
    """Every problem of a policy to be written (Nomad's ACLPolicy.Validate, rules parsed strictly)."""
    problems = []
    if not POLICY_NAME.match(name):
        problems.append(f"invalid name '{name}'")
    try:
        parse(rules, strict=True)
    except PolicyError as e:
        problems += [f"failed to parse rules: {p}" for p in e.problems]
    if len(description) > MAX_POLICY_DESCRIPTION:
        problems.append(f"description longer than {MAX_POLICY_DESCRIPTION}")
    return problems


def upsert_policy(reads: AclCommandReads, name: str, description: str, rules: str) -> AclChange:
    problems = policy_problems(name, description, rules)
    if problems:
        raise Invalid.of(problems)
    event = ACLPolicyUpserted(name=name, description=description, rules=rules)
    return AclChange(events=[NewEvent(event, reads.acl_policy_stream_version(name))])


def delete_policy(reads: AclCommandReads, name: str) -> AclChange:
    """A policy removed; one that does not exist is gone already (Nomad answers it alike). The
    tokens naming it keep its name, and it grants them nothing."""
    if reads.acl_policy(name) is None:
        return AclChange()
    return AclChange(events=[NewEvent(ACLPolicyDeleted(name=name), reads.acl_policy_stream_version(name))])


def _type_problems(request: TokenRequest) -> list[str]:
    problems = []
    if len(request.name) > MAX_TOKEN_NAME:
        problems.append("token name too long")
    if request.type == CLIENT:
        if not request.policies:
            problems.append("client token missing policies or roles")
    elif request.type == MANAGEMENT:
        if request.policies:
            problems.append("management token cannot be associated with policies or roles")
    else:
        problems.append("token type must be client or management")
    return problems


def _expiry_problems(request: TokenRequest, now: int, limits: TokenLimits) -> list[str]:
    """A new token's expiry: its TTL not negative, its time within the limits from now."""
    problems = []
    if request.expiration_ttl < 0:
        problems.append(
            f"token expiration TTL '{format_duration(request.expiration_ttl)}' should not be negative"
        )
    if request.expiration_time:
        expires_in = request.expiration_time - now
        if expires_in < 0:
            problems.append("expiration time cannot be before create time")
        elif expires_in > limits.max_ttl:
            problems.append(f"expiration time cannot be more than {format_duration(limits.max_ttl)} in the future "
                            f"(was {format_duration(expires_in)})")  # fmt: skip
        elif expires_in < limits.min_ttl:
            problems.append(f"expiration time cannot be less than {format_duration(limits.min_ttl)} in the future "
                            f"(was {format_duration(expires_in)})")  # fmt: skip
    return problems


def create_token(
    reads: AclCommandReads, request: TokenRequest, secret: TokenSecret, now: int, limits: TokenLimits
) -> AclChange:
    """A new token (or one imported under the IDs it names: `secret` holds them): its expiry
    from its TTL if it names no time."""
    if not request.expiration_time and request.expiration_ttl > 0:
        request.expiration_time = now + request.expiration_ttl
    problems = _type_problems(request) + _expiry_problems(request, now, limits)
    if problems:
        raise Invalid.of(problems)
    if reads.acl_token_by_hash(secret.secret_hash) is not None:
        raise Invalid("a token with this SecretID exists")
    token = ACLToken(
        accessor_id=secret.accessor_id,
        name=request.name,
        type=request.type,
        policies=list(dict.fromkeys(request.policies)),
        global_=request.global_,
        create_time=now,
        expiration_time=request.expiration_time,
        expiration_ttl=request.expiration_ttl,
        secret_hash=secret.secret_hash,
        sealed_secret=secret.sealed,
    )
    version = reads.acl_token_stream_version(token.accessor_id)
    return AclChange(events=[NewEvent(ACLTokenUpserted(token=token), version)], token=token)


def update_token(reads: AclCommandReads, existing: ACLToken, request: TokenRequest) -> AclChange:
    """The token's name, type and policies changed; its secret, creation and expiry kept (and
    neither its Global flag nor its expiry may change, as Nomad refuses)."""
    problems = _type_problems(request)
    if existing.global_ != request.global_:
        problems.append("cannot toggle global mode")
    if request.expiration_ttl != existing.expiration_ttl:
        problems.append("cannot update expiration TTL")
    if request.expiration_time and request.expiration_time != existing.expiration_time:
        problems.append("cannot update expiration time")
    if problems:
        raise Invalid.of(problems)
    token = existing.model_copy(
        update={"name": request.name, "type": request.type, "policies": list(dict.fromkeys(request.policies))}
    )
    version = reads.acl_token_stream_version(token.accessor_id)
    return AclChange(events=[NewEvent(ACLTokenUpserted(token=token), version)], token=token)


def upsert_token(
    reads: AclCommandReads, request: TokenRequest, secret: TokenSecret | None, now: int, limits: TokenLimits
) -> AclChange:
    """Create (no AccessorID: `secret` holds the new IDs), update (a known AccessorID), or import
    a client token under the IDs the request names (`secret`, prepared when both are UUIDs)."""
    if not request.accessor_id:
        assert secret is not None
        return create_token(reads, request, secret, now, limits)
    existing = reads.acl_token(request.accessor_id)
    if existing is not None:
        return update_token(reads, existing, request)
    if secret is None or request.type == MANAGEMENT:
        raise Invalid(f"cannot find token {request.accessor_id}")
    return create_token(reads, request, secret, now, limits)


def delete_token(reads: AclCommandReads, accessor_id: str) -> AclChange:
    if reads.acl_token(accessor_id) is None:
        raise Invalid(f"Cannot delete nonexistent tokens: {accessor_id}")
    event = ACLTokenDeleted(accessor_id=accessor_id)
    return AclChange(events=[NewEvent(event, reads.acl_token_stream_version(accessor_id))])
