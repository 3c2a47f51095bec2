"""Variable commands decided as Nomad's state store decides them: check-and-set, writes and
deletes against a held lock, lock acquire (refused while held or within its LockDelay after it
lapsed), renew and release; each append after the stream version read."""

from __future__ import annotations

import pytest

from drover.control.commands import variables as cmd
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model.events import VariableDeleted, VariableLockRenewed, VariableUpserted
from drover.model.state import InMemoryState
from drover.model.variables import EncryptedItems, VariableEncrypted, VariableLock

SEALED = EncryptedItems(key_id="k1", data="c2VhbGVk")
NEW = EncryptedItems(key_id="k1", data="bmV3")


class Reads:
    def __init__(self, *variables: VariableEncrypted, version: int = 3) -> None:
        self.state = InMemoryState()
        for v in variables:
            self.state.upsert_variable(v)
        self.version = version

    def variable(self, namespace: str, path: str) -> VariableEncrypted | None:
        return self.state.variable(namespace, path)

    def variable_stream_version(self, namespace: str, path: str) -> int:
        return self.version


def var(modify_index: int = 10, lock: VariableLock | None = None) -> VariableEncrypted:
    return VariableEncrypted(path="app/db", create_index=5, create_time=50, modify_index=modify_index,
                             modify_time=60, lock=lock, sealed=SEALED)  # fmt: skip


def held(lock_id: str = "holder", expires_at: int = 1000, delay: int = 100) -> VariableLock:
    return VariableLock(id=lock_id, ttl=500, lock_delay=delay, expires_at=expires_at)


@pytest.mark.parametrize(
    ("existing", "cas", "refused", "shows"),
    [
        (None, None, False, False), (var(), None, False, False),
        (None, 0, False, False), (var(), 0, True, True),
        (None, 7, True, False), (var(10), 10, False, False), (var(10), 9, True, True),
    ],
)  # fmt: skip
def test_check_and_set(
    existing: VariableEncrypted | None, cas: int | None, refused: bool, shows: bool
) -> None:
    assert cmd.cas_conflict(existing, cas) == (refused, shows)
    change = cmd.upsert(Reads(*[v for v in [existing] if v]), "default", "app/db", NEW, 500, cas=cas)
    if refused:
        assert not change.events and change.conflict is not None
        assert (change.conflict.var is existing) is shows or change.conflict.var == existing
    else:
        (ev,) = change.events
        assert isinstance(ev.event, VariableUpserted) and ev.event.sealed == NEW and ev.expected_version == 3


@pytest.mark.parametrize(
    ("lock", "lock_id", "now", "refused"),
    [
        (None, "", 500, False),
        (held(), "", 500, True),
        (held(), "other", 500, True),
        (held(), "holder", 500, False),
        (held(expires_at=400), "", 500, False),  # lapsed: no one holds it
    ],
)  # fmt: skip
def test_a_write_must_name_a_held_lock(
    lock: VariableLock | None, lock_id: str, now: int, refused: bool
) -> None:
    change = cmd.upsert(Reads(var(lock=lock)), "default", "app/db", NEW, now, lock_id=lock_id)
    assert (change.conflict is not None) is refused
    if not refused:
        event = change.events[0].event
        assert isinstance(event, VariableUpserted) and event.lock == lock  # the lock stays with it
    # A purge names no lock: refused while one is held, whoever asks.
    deleted = cmd.delete(Reads(var(lock=lock)), "default", "app/db", now)
    assert (deleted.conflict is not None) is (lock is not None and lock.live(now))


@pytest.mark.parametrize(
    ("lock", "lock_id", "now", "refused"),
    [
        (None, "new", 500, False),
        (held(), "new", 500, True),            # held by another
        (held(), "holder", 500, False),        # its holder again
        (held(expires_at=400), "new", 450, True),   # lapsed, within its LockDelay
        (held(expires_at=400), "new", 499, True),
        (held(expires_at=400), "new", 500, False),  # the delay over: free
        (held(expires_at=400, delay=0), "new", 400, False),
    ],
)  # fmt: skip
def test_lock_acquire(lock: VariableLock | None, lock_id: str, now: int, refused: bool) -> None:
    assert cmd.lock_refusal(var(lock=lock), lock_id, now) is refused
    change = cmd.acquire(
        Reads(var(lock=lock)), "default", "app/db", NEW, now, lock_id=lock_id, ttl=200, lock_delay=50
    )
    if refused:
        assert not change.events and change.conflict is not None and change.conflict.var is None
    else:
        event = change.events[0].event
        assert isinstance(event, VariableUpserted)
        assert event.lock == VariableLock(id=lock_id, ttl=200, lock_delay=50, expires_at=now + 200)


def test_acquire_creates_a_variable_that_does_not_exist() -> None:
    change = cmd.acquire(Reads(), "default", "locks/x", NEW, 10, lock_id="l", ttl=200, lock_delay=50)
    assert isinstance(change.events[0].event, VariableUpserted) and change.before is None


def test_renew_moves_the_expiry_by_its_holder_only() -> None:
    reads = Reads(var(lock=held()))
    (ev,) = cmd.renew(reads, "default", "app/db", "holder", 900).events
    assert ev.event == VariableLockRenewed(
        namespace="default", path="app/db", lock_id="holder", expires_at=1400
    )
    with pytest.raises(Conflict, match="attempting to modify locked variable"):
        cmd.renew(reads, "default", "app/db", "other", 900)
    with pytest.raises(Conflict, match="doesn't hold a lock"):
        cmd.renew(reads, "default", "app/db", "holder", 1000)  # lapsed
    with pytest.raises(NotFound):
        cmd.renew(Reads(), "default", "app/db", "holder", 900)
    with pytest.raises(Invalid):
        cmd.renew(reads, "default", "app/db", "", 900)


def test_release_by_its_holder_keeps_the_items_and_modify_time() -> None:
    reads = Reads(var(lock=held()))
    (ev,) = cmd.release(reads, "default", "app/db", "holder", 900).events
    assert isinstance(ev.event, VariableUpserted)
    assert (ev.event.lock, ev.event.sealed, ev.event.at) == (None, SEALED, 60)
    refused = cmd.release(reads, "default", "app/db", "other", 900)
    assert not refused.events and refused.conflict is not None and refused.conflict.lock
    with pytest.raises(Conflict):
        cmd.release(Reads(var()), "default", "app/db", "holder", 900)
    with pytest.raises(NotFound):
        cmd.release(Reads(), "default", "app/db", "holder", 900)


def test_the_reducer_keeps_creation_and_a_rekey_keeps_the_indexes() -> None:
    state = InMemoryState()
    VariableUpserted(namespace="default", path="p", sealed=SEALED, at=100).apply_to(state, 4)
    VariableUpserted(namespace="default", path="p", sealed=NEW, at=200).apply_to(state, 9)
    v = state.variable("default", "p")
    assert v is not None and (v.create_index, v.create_time, v.modify_index, v.modify_time) == (
        4,
        100,
        9,
        200,
    )
    rekeyed = EncryptedItems(key_id="k2", data="eA==")
    VariableUpserted(namespace="default", path="p", sealed=rekeyed, rekey=True).apply_to(state, 12)
    assert state.variable("default", "p") == v.model_copy(update={"sealed": rekeyed})
    VariableDeleted(namespace="default", path="p").apply_to(state, 13)
    assert state.variable("default", "p") is None
