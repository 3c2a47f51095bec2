"""ACL commands decided as Nomad's ACL endpoint decides them: a bootstrap once (again only with
the reset index), policies checked strictly, tokens created with their expiry, updated with
their secret and expiry kept, imported under their own IDs, deleted; each append after the
version of its stream it read."""

from __future__ import annotations

import pytest

from drover.control.commands import acl as cmd
from drover.control.errors import Invalid
from drover.model.acl import ACLPolicy, ACLToken, TokenSecret
from drover.model.events import (
    ACLBootstrapped,
    ACLPolicyDeleted,
    ACLPolicyUpserted,
    ACLTokenDeleted,
    ACLTokenUpserted,
)
from drover.model.state import InMemoryState
from drover.model.variables import EncryptedItems

SECOND = 1_000_000_000
HOUR = 3600 * SECOND
NOW = 1_700_000_000 * SECOND
LIMITS = cmd.TokenLimits(min_ttl=60 * SECOND, max_ttl=24 * HOUR)
SECRET = TokenSecret("acc-1", "hash-1", EncryptedItems(key_id="k1", data="c2VhbGVk"))


class Reads:
    def __init__(self, *, bootstrap: tuple[int, int] = (0, 0), version: int = 2) -> None:
        self.state = InMemoryState()
        self.bootstrap = bootstrap
        self.version = version

    def acl_policy(self, name: str) -> ACLPolicy | None:
        return self.state.acl_policy(name)

    def acl_token(self, accessor_id: str) -> ACLToken | None:
        return self.state.acl_token(accessor_id)

    def acl_token_by_hash(self, secret_hash: str) -> ACLToken | None:
        return next((t for t in self.state.acl_tokens.values() if t.secret_hash == secret_hash), None)

    def acl_policy_stream_version(self, name: str) -> int:
        return self.version

    def acl_token_stream_version(self, accessor_id: str) -> int:
        return self.version

    def acl_bootstrap(self) -> tuple[int, int]:
        return self.bootstrap


def token(**update: object) -> ACLToken:
    base = ACLToken(accessor_id="acc-0", name="ci", policies=["readonly"], create_time=NOW - HOUR,
                    secret_hash="hash-0", sealed_secret=SECRET.sealed, create_index=7, modify_index=7)  # fmt: skip
    return base.model_copy(update=update)


def test_the_first_bootstrap_makes_a_global_management_token_after_the_stream_it_read() -> None:
    change = cmd.bootstrap(Reads(), SECRET, 0, NOW)
    (new,) = change.events
    assert isinstance(new.event, ACLBootstrapped) and new.expected_version == 0
    t = new.event.token
    assert (t.accessor_id, t.name, t.type, t.global_, t.create_time) == (
        "acc-1",
        "Bootstrap Token",
        "management",
        True,
        NOW,
    )
    assert (t.secret_hash, t.sealed_secret) == ("hash-1", SECRET.sealed) and t.policies == []


@pytest.mark.parametrize(
    ("reset_index", "refusal"),
    [
        (0, "ACL bootstrap already done (reset index: 41)"),
        (40, "Invalid bootstrap reset index (specified 40, reset index: 41)"),
        (None, ""),
    ],
)
def test_a_second_bootstrap_needs_the_reset_index_of_the_last(reset_index: int | None, refusal: str) -> None:
    reads = Reads(bootstrap=(1, 41))
    if refusal:
        with pytest.raises(Invalid, match=refusal.replace("(", r"\(").replace(")", r"\)")):
            cmd.bootstrap(reads, SECRET, reset_index or 0, NOW)
        return
    (new,) = cmd.bootstrap(reads, SECRET, 41, NOW).events
    assert new.expected_version == 1  # after the last bootstrap: two resets at once cannot both land


def test_a_bootstrap_secret_in_use_is_refused() -> None:
    reads = Reads()
    reads.state.upsert_acl_token(token(secret_hash="hash-1"))
    with pytest.raises(Invalid, match="invalid acl token"):
        cmd.bootstrap(reads, SECRET, 0, NOW)


def test_a_policy_is_written_after_its_stream_and_deleted_once() -> None:
    reads = Reads(version=4)
    (new,) = cmd.upsert_policy(reads, "readonly", "reads", 'node { policy = "read" }').events
    assert new.event == ACLPolicyUpserted(
        name="readonly", description="reads", rules='node { policy = "read" }'
    )
    assert new.expected_version == 4
    # Deleting one that is not there writes nothing (and is no error, as Nomad's).
    assert cmd.delete_policy(reads, "readonly").events == []
    reads.state.upsert_acl_policy(ACLPolicy(name="readonly"))
    (gone,) = cmd.delete_policy(reads, "readonly").events
    assert gone.event == ACLPolicyDeleted(name="readonly") and gone.expected_version == 4


def test_a_bad_policy_is_refused_with_every_problem() -> None:
    with pytest.raises(Invalid) as e:
        cmd.upsert_policy(
            Reads(), "bad name", "x" * 257, 'namespace "d" { policy = "nope" }\nnode { policy = "x" }'
        )
    assert e.value.message.splitlines() == [
        "invalid name 'bad name'",
        'failed to parse rules: Invalid namespace policy "nope" in namespace "d" (line 1)',
        'failed to parse rules: Invalid node policy "x" (line 2)',
        "description longer than 256",
    ]


def test_empty_rules_are_a_policy() -> None:
    assert cmd.upsert_policy(Reads(), "empty", "", "").events


def test_a_new_token_expires_its_ttl_after_its_creation() -> None:
    request = cmd.TokenRequest(name="ci", type="client", policies=["readonly", "readonly", "missing"],
                               expiration_ttl=HOUR)  # fmt: skip
    change = cmd.upsert_token(Reads(), request, SECRET, NOW, LIMITS)
    (new,) = change.events
    assert isinstance(new.event, ACLTokenUpserted) and new.expected_version == 2
    t = new.event.token
    assert (t.accessor_id, t.create_time, t.expiration_time, t.expiration_ttl) == (
        "acc-1",
        NOW,
        NOW + HOUR,
        HOUR,
    )
    # A policy that does not exist may be named (it grants nothing), each once.
    assert t.policies == ["readonly", "missing"] and change.token == t


@pytest.mark.parametrize(
    ("request_", "problems"),
    [
        (cmd.TokenRequest(type="client"), ["client token missing policies or roles"]),
        (cmd.TokenRequest(type="management", policies=["p"]), ["management token cannot be associated with policies or roles"]),
        (cmd.TokenRequest(type="root", name="x" * 257), ["token name too long", "token type must be client or management"]),
        (cmd.TokenRequest(type="management", expiration_ttl=-SECOND), ["token expiration TTL '-1s' should not be negative"]),
        (cmd.TokenRequest(type="management", expiration_ttl=25 * HOUR),
         ["expiration time cannot be more than 24h0m0s in the future (was 25h0m0s)"]),
        (cmd.TokenRequest(type="management", expiration_ttl=10 * SECOND),
         ["expiration time cannot be less than 1m0s in the future (was 10s)"]),
        (cmd.TokenRequest(type="management", expiration_time=NOW - SECOND), ["expiration time cannot be before create time"]),
    ],
)  # fmt: skip
def test_a_bad_token_is_refused_with_every_problem(request_: cmd.TokenRequest, problems: list[str]) -> None:
    with pytest.raises(Invalid) as e:
        cmd.upsert_token(Reads(), request_, SECRET, NOW, LIMITS)
    assert e.value.message.splitlines() == problems


def test_an_update_keeps_the_secret_creation_and_expiry() -> None:
    reads = Reads()
    old = token(expiration_time=NOW + HOUR, expiration_ttl=HOUR)
    reads.state.upsert_acl_token(old)
    request = cmd.TokenRequest(accessor_id="acc-0", name="renamed", type="management", expiration_ttl=HOUR)
    (new,) = cmd.upsert_token(reads, request, None, NOW, LIMITS).events
    assert isinstance(new.event, ACLTokenUpserted)
    t = new.event.token
    assert (t.name, t.type, t.policies) == ("renamed", "management", [])
    assert (t.secret_hash, t.sealed_secret, t.create_time, t.expiration_time) == (
        old.secret_hash, old.sealed_secret, old.create_time, old.expiration_time
    )  # fmt: skip
    with pytest.raises(Invalid) as e:
        cmd.upsert_token(reads, cmd.TokenRequest(accessor_id="acc-0", type="client", policies=["p"], global_=True,
                                                 expiration_time=NOW + 2 * HOUR), None, NOW, LIMITS)  # fmt: skip
    assert e.value.message.splitlines() == [
        "cannot toggle global mode", "cannot update expiration TTL", "cannot update expiration time"
    ]  # fmt: skip


def test_an_unknown_accessor_is_refused_unless_a_client_token_is_imported_under_its_ids() -> None:
    reads = Reads()
    request = cmd.TokenRequest(accessor_id="acc-1", type="client", policies=["p"])
    with pytest.raises(Invalid, match="cannot find token acc-1"):
        cmd.upsert_token(reads, request, None, NOW, LIMITS)
    management = cmd.TokenRequest(accessor_id="acc-1", type="management")
    with pytest.raises(Invalid, match="cannot find token acc-1"):
        cmd.upsert_token(reads, management, SECRET, NOW, LIMITS)
    (new,) = cmd.upsert_token(reads, request, SECRET, NOW, LIMITS).events
    assert isinstance(new.event, ACLTokenUpserted) and new.event.token.accessor_id == "acc-1"


def test_a_token_is_deleted_once() -> None:
    reads = Reads()
    with pytest.raises(Invalid, match="Cannot delete nonexistent tokens: acc-0"):
        cmd.delete_token(reads, "acc-0")
    reads.state.upsert_acl_token(token())
    (gone,) = cmd.delete_token(reads, "acc-0").events
    assert gone.event == ACLTokenDeleted(accessor_id="acc-0") and gone.expected_version == 2
