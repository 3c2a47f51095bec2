"""ACL events: policies written and deleted, tokens created, updated and deleted, and the one
bootstrap. A token's secret is in them only as the API made it before any command saw it: its
keyed hash and its ciphertext under the keyring (drover.model.acl). Nomad's event stream
carries no ACL topic here, so none is derived from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.acl import ACLPolicy, ACLToken
from drover.model.events.base import Event, Reads

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

# The stream of the bootstrap: its version is how many times it happened, so two bootstraps
# decided on the same read cannot both land.
ACL_BOOTSTRAP_STREAM = "acl-bootstrap"


def acl_policy_stream(name: str) -> str:
    return f"acl-policy:{name}"


def acl_token_stream(accessor_id: str) -> str:
    return f"acl-token:{accessor_id}"


class ACLPolicyUpserted(Event):
    """A policy written, new or again (its CreateIndex kept)."""

    type: Literal["ACLPolicyUpserted"] = "ACLPolicyUpserted"
    nomad_event_type: ClassVar[str | None] = None
    name: str
    description: str = ""
    rules: str = ""

    def stream(self) -> str:
        return acl_policy_stream(self.name)

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.acl_policy(self.name)
        policy = ACLPolicy(
            name=self.name,
            description=self.description,
            rules=self.rules,
            create_index=old.create_index if old is not None else index,
            modify_index=index,
        )
        state.upsert_acl_policy(policy)

    def reads(self, r: Reads) -> None:
        pass  # the policy: one row, read when asked for


class ACLPolicyDeleted(Event):
    type: Literal["ACLPolicyDeleted"] = "ACLPolicyDeleted"
    nomad_event_type: ClassVar[str | None] = None
    name: str

    def stream(self) -> str:
        return acl_policy_stream(self.name)

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.delete_acl_policy(self.name)

    def reads(self, r: Reads) -> None:
        pass


class ACLTokenUpserted(Event):
    """A token created or updated, as the command decided it (its secret, creation time and
    expiry kept from before on an update); the reducer stamps its indexes."""

    type: Literal["ACLTokenUpserted"] = "ACLTokenUpserted"
    nomad_event_type: ClassVar[str | None] = None
    token: ACLToken

    def stream(self) -> str:
        return acl_token_stream(self.token.accessor_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        _write_token(state, self.token, index)

    def reads(self, r: Reads) -> None:
        pass


class ACLTokenDeleted(Event):
    type: Literal["ACLTokenDeleted"] = "ACLTokenDeleted"
    nomad_event_type: ClassVar[str | None] = None
    accessor_id: str

    def stream(self) -> str:
        return acl_token_stream(self.accessor_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.delete_acl_token(self.accessor_id)

    def reads(self, r: Reads) -> None:
        pass


class ACLBootstrapped(Event):
    """The ACL system bootstrapped (again, after a reset): its management token created. The
    event's log position is the bootstrap's reset index."""

    type: Literal["ACLBootstrapped"] = "ACLBootstrapped"
    nomad_event_type: ClassVar[str | None] = None
    token: ACLToken

    def stream(self) -> str:
        return ACL_BOOTSTRAP_STREAM

    def apply_to(self, state: StateWriter, index: int) -> None:
        _write_token(state, self.token, index)

    def reads(self, r: Reads) -> None:
        pass


def _write_token(state: StateWriter, token: ACLToken, index: int) -> None:
    old = state.acl_token(token.accessor_id)
    created = old.create_index if old is not None else index
    state.upsert_acl_token(token.model_copy(update={"create_index": created, "modify_index": index}))
