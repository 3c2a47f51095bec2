"""A Nomad Variable's events: each write, lock change and deletion of a variable. They carry
its Items only as the keyring sealed them (drover.model.variables.EncryptedItems): the log,
the stream that relays it and the audit trail never hold a secret in the clear. Nomad's event
stream has no topic for variables, so none is derived from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.events.base import Event, Reads
from drover.model.variables import EncryptedItems, VariableEncrypted, VariableLock

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


def variable_stream(namespace: str, path: str) -> str:
    """A variable's stream: each write appends after the version it read, so a check-and-set
    or a lock taken twice at once cannot both pass."""
    return f"var:{namespace}/{path}"


class VariableUpserted(Event):
    """A variable written (a set, a check-and-set, a lock acquired, renewed or released, or its
    items sealed again under a newer key): its new items and lock, at time `at`. `rekey`: the
    items sealed again, nothing else changed (its ModifyIndex and ModifyTime kept)."""

    type: Literal["VariableUpserted"] = "VariableUpserted"
    nomad_event_type: ClassVar[str | None] = None
    namespace: str
    path: str
    sealed: EncryptedItems
    lock: VariableLock | None = None
    at: int = 0
    rekey: bool = False

    def stream(self) -> str:
        return variable_stream(self.namespace, self.path)

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.variable(self.namespace, self.path)
        if self.rekey:
            if old is not None:
                state.upsert_variable(old.model_copy(update={"sealed": self.sealed}))
            return
        var = VariableEncrypted(
            namespace=self.namespace,
            path=self.path,
            create_index=old.create_index if old is not None else index,
            create_time=old.create_time if old is not None else self.at,
            modify_index=index,
            modify_time=self.at,
            lock=self.lock,
            sealed=self.sealed,
        )
        state.upsert_variable(var)

    def reads(self, r: Reads) -> None:
        pass  # the variable: one row, read when asked for


class VariableDeleted(Event):
    """A variable purged: it leaves the projection; the log keeps its (sealed) history."""

    type: Literal["VariableDeleted"] = "VariableDeleted"
    nomad_event_type: ClassVar[str | None] = None
    namespace: str
    path: str

    def stream(self) -> str:
        return variable_stream(self.namespace, self.path)

    def apply_to(self, state: StateWriter, index: int) -> None:
        state.delete_variable(self.namespace, self.path)

    def reads(self, r: Reads) -> None:
        pass


class VariableLockRenewed(Event):
    """A variable's lock renewed by its holder until `expires_at`; nothing else changes (its
    ModifyIndex neither: Nomad's renewal writes no new version)."""

    type: Literal["VariableLockRenewed"] = "VariableLockRenewed"
    nomad_event_type: ClassVar[str | None] = None
    namespace: str
    path: str
    lock_id: str
    expires_at: int

    def stream(self) -> str:
        return variable_stream(self.namespace, self.path)

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.variable(self.namespace, self.path)
        if old is None or old.lock is None or old.lock.id != self.lock_id:
            return
        lock = old.lock.model_copy(update={"expires_at": self.expires_at})
        state.upsert_variable(old.model_copy(update={"lock": lock}))

    def reads(self, r: Reads) -> None:
        pass
