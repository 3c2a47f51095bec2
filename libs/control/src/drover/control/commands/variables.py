"""Variable commands (Nomad's Variables.Apply and RenewLock): set, check-and-set, delete, and
the lock's acquire, renew and release, decided as Nomad's state store decides them. The items
come sealed (the API seals them with the keyring): nothing here sees a secret.

A refusal Nomad answers with the variable it conflicts with is a `VariableChange` with
`conflict` set and no events (the API answers it 409 with that variable); every other refusal
raises. Each write appends after the version of the variable's stream it read, so two writes
decided on one read cannot both land.

Locks are decided against the time, lazily: a lock not renewed within its TTL has lapsed (no
one holds it), and stays unavailable for its LockDelay after; no timer releases it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from drover.control.change import Change
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model.events import NewEvent, VariableDeleted, VariableLockRenewed, VariableUpserted
from drover.model.variables import EncryptedItems, VariableEncrypted, VariableLock


class VariableReads(Protocol):
    def variable(self, namespace: str, path: str) -> VariableEncrypted | None: ...

    def variable_stream_version(self, namespace: str, path: str) -> int: ...


@dataclass
class VarConflict:
    """What a refused write answers (Nomad's Conflict): the variable as it is (`var`), or, where
    Nomad hides it (a lock held by another), its namespace and path alone, with an empty Lock
    if `lock` is set."""

    namespace: str
    path: str
    var: VariableEncrypted | None = None
    lock: bool = False


@dataclass
class VariableChange(Change):
    """The change, and what it answers: the variable before (the reducer's input, to render the
    one written), or the conflict."""

    before: VariableEncrypted | None = None
    conflict: VarConflict | None = None


def _write(reads: VariableReads, event: VariableUpserted | VariableDeleted | VariableLockRenewed,
           before: VariableEncrypted | None) -> VariableChange:  # fmt: skip
    version = reads.variable_stream_version(event.namespace, event.path)
    return VariableChange(events=[NewEvent(event, version)], before=before)


def _refused(
    namespace: str, path: str, var: VariableEncrypted | None = None, *, lock: bool = False
) -> VariableChange:
    return VariableChange(conflict=VarConflict(namespace, path, var, lock))


def cas_conflict(existing: VariableEncrypted | None, cas: int | None) -> tuple[bool, bool]:
    """Whether a check-and-set at index `cas` (None: none asked) is refused, and whether the
    refusal shows the variable (else a zero value: there is none). 0 means it must not exist."""
    if cas is None:
        return False, False
    if existing is None:
        return cas != 0, False
    refused = cas != existing.modify_index
    return refused, refused


def locked_against(existing: VariableEncrypted | None, lock_id: str, now: int) -> bool:
    """Whether a live lock on the variable is held by someone other than `lock_id` (Nomad's
    isLocked: a write to a locked variable must name its lock)."""
    held = existing.held_lock(now) if existing is not None else None
    return held is not None and held.id != lock_id


def upsert(reads: VariableReads, namespace: str, path: str, sealed: EncryptedItems, now: int, *,
           cas: int | None = None, lock_id: str = "") -> VariableChange:  # fmt: skip
    """A set, or a check-and-set at `cas`. The lock the variable holds stays with it."""
    existing = reads.variable(namespace, path)
    refused, shows = cas_conflict(existing, cas)
    if refused:
        return _refused(namespace, path, existing if shows else None)
    if locked_against(existing, lock_id, now):
        return _refused(namespace, path)
    lock = existing.lock if existing is not None else None
    event = VariableUpserted(namespace=namespace, path=path, sealed=sealed, lock=lock, at=now)
    return _write(reads, event, existing)


def delete(
    reads: VariableReads, namespace: str, path: str, now: int, *, cas: int | None = None
) -> VariableChange:
    """A purge, or one checked at `cas`; a variable that does not exist is gone already."""
    existing = reads.variable(namespace, path)
    refused, shows = cas_conflict(existing, cas)
    if refused:
        return _refused(namespace, path, existing if shows else None)
    if existing is None:
        return VariableChange()
    if locked_against(existing, "", now):
        return _refused(namespace, path)
    return _write(reads, VariableDeleted(namespace=namespace, path=path), existing)


def lock_refusal(existing: VariableEncrypted | None, lock_id: str, now: int) -> bool:
    """Whether a lock-acquire is refused: another holds the lock, or it lapsed less than its
    LockDelay ago (Nomad's lock-delay keeps a lost lock from being taken at once)."""
    if existing is None or existing.lock is None:
        return False
    lock = existing.lock
    if lock.live(now):
        return lock.id != lock_id
    return lock.delayed(now) and lock.id != lock_id


def acquire(reads: VariableReads, namespace: str, path: str, sealed: EncryptedItems, now: int, *,
            lock_id: str, ttl: int, lock_delay: int) -> VariableChange:  # fmt: skip
    """Take the variable's lock as `lock_id` (a new one's, or its holder's again), creating the
    variable if it does not exist; as Nomad's, it writes the request's items over the old."""
    existing = reads.variable(namespace, path)
    if lock_refusal(existing, lock_id, now):
        return _refused(namespace, path)
    lock = VariableLock(id=lock_id, ttl=ttl, lock_delay=lock_delay, expires_at=now + ttl)
    event = VariableUpserted(namespace=namespace, path=path, sealed=sealed, lock=lock, at=now)
    return _write(reads, event, existing)


def renew(reads: VariableReads, namespace: str, path: str, lock_id: str, now: int) -> VariableChange:
    """Renew the lock for another TTL, by its holder; its ModifyIndex stays (a renewal changes
    no data: Nomad's is not even a write)."""
    if not lock_id:
        raise Invalid("missing lock information")
    existing = reads.variable(namespace, path)
    if existing is None:
        raise NotFound("variable doesn't exist")
    if existing.held_lock(now) is None:
        raise Conflict("variable doesn't hold a lock")
    assert existing.lock is not None
    if existing.lock.id != lock_id:
        raise Conflict("attempting to modify locked variable")
    event = VariableLockRenewed(
        namespace=namespace, path=path, lock_id=lock_id, expires_at=now + existing.lock.ttl
    )
    return _write(reads, event, existing)


def release(reads: VariableReads, namespace: str, path: str, lock_id: str, now: int) -> VariableChange:
    """Release the lock, by its holder; the items stay as they are."""
    existing = reads.variable(namespace, path)
    if existing is None:
        raise NotFound("variable doesn't exist")
    if existing.held_lock(now) is None:
        raise Conflict("variable doesn't hold a lock")
    assert existing.lock is not None
    if existing.lock.id != lock_id:
        return _refused(namespace, path, lock=True)
    event = VariableUpserted(
        namespace=namespace, path=path, sealed=existing.sealed, lock=None, at=existing.modify_time
    )
    return _write(reads, event, existing)


def rekey(reads: VariableReads, existing: VariableEncrypted, sealed: EncryptedItems) -> VariableChange:
    """The variable's items sealed again (under the active key), nothing else changed."""
    event = VariableUpserted(namespace=existing.namespace, path=existing.path, sealed=sealed, rekey=True)
    return _write(reads, event, existing)
