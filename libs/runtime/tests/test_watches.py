"""What a commit names as changed, and which blocking queries that wakes."""

from __future__ import annotations

import pytest

from drover.runtime import watches
from drover.runtime.watches import ChangeIndex, notify_payloads, parse_payload


def _heard(payloads: list[str]) -> tuple[set[int], set[str], set[str]]:
    positions, keys, every = set(), set(), set()
    for p in payloads:
        position, k, c = parse_payload(p)
        positions.add(position)
        keys.update(k)
        every.update(c)
    return positions, keys, every


@pytest.mark.parametrize(
    ("nodes", "every", "payloads"),
    [
        (0, [], 1),
        (1, [], 1),
        (40, ["alloc"], 1),
        (1000, ["alloc"], 6),  # a large plan: every node named (IDs of 36), the allocs by category
    ],
)
def test_a_commit_names_what_it_changed_in_notifications_postgres_takes(
    nodes: int, every: list[str], payloads: int
) -> None:
    keys = {"allocs", "evals", "job:default/big-001", "eval:e1"}
    keys |= {f"node:{i:08d}-6a1f-4d1e-9c1a-6f4e1c0b7a{i % 100:02d}" for i in range(nodes)}
    out = notify_payloads(4242, keys, every)
    assert len(out) == payloads
    assert all(len(p.encode()) < 8000 for p in out)
    positions, named, heard_every = _heard(out)
    assert positions == {4242} and named == keys and heard_every == set(every)


def test_keys_that_escape_long_still_fit() -> None:
    keys = {f'node:"\\"{i}"ü"' * 8 for i in range(300)}
    out = notify_payloads(7, keys)
    assert all(len(p.encode()) < 8000 for p in out)
    assert _heard(out) == ({7}, keys, set())


def test_a_bare_position_changes_everything() -> None:
    assert parse_payload("17") == (17, [], ["*"])
    changes = ChangeIndex(floor=10)
    changes.note(*parse_payload("17"))
    assert changes.changed_after(["node:n1"], 16) and not changes.changed_after(["node:n1"], 17)


def test_a_query_wakes_only_for_what_it_reads() -> None:
    changes = ChangeIndex(floor=100)
    web, other, n1 = "job:default/web", "job:default/other", "node:n1"
    # Nothing heard yet: from below the floor it cannot be told it is current.
    assert changes.changed_after([web], 99) and not changes.changed_after([web], 100)
    changes.note(101, [other, "node:n2", "jobs"])
    assert not changes.changed_after([web], 100) and not changes.changed_after([n1], 100)
    assert changes.changed_after(["jobs"], 100) and changes.changed_after([other], 100)
    assert changes.changed_after([web, other], 100)  # any of its keys
    changes.note(102, [web])
    assert changes.changed_after([web], 101) and not changes.changed_after([web], 102)
    # A commit that named its allocs by category changes every alloc key, no other.
    changes.note(103, ["node:n1"], ["alloc"])
    assert changes.changed_after(["alloc:a1"], 102) and changes.changed_after([n1], 102)
    assert not changes.changed_after(["eval:e1"], 102)
    assert changes.index == 103


def test_forgetting_answers_every_query_from_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watches, "KEYS_KEPT", 3)
    changes = ChangeIndex(floor=0)
    for i in range(1, 4):
        changes.note(i, [f"node:n{i}"])
    assert not changes.changed_after(["node:n9"], 1) and changes.floor == 0
    changes.note(4, ["node:n4"])  # a fourth key: they are forgotten into the floor
    assert changes.floor == 4 and changes.changed_after(["node:n9"], 3)
    assert not changes.changed_after(["node:n9"], 4)
    changes.forget(10)  # notifications missed (the connection was away)
    assert changes.changed_after(["node:n4"], 9) and changes.index == 10


@pytest.mark.parametrize(
    ("job_id", "parents"),
    [
        ("web", []),
        ("report/dispatch-1700000000-0a1b2c3d", ["report"]),
        ("report/dispatch-march-1700000000-0a1b2c3d", ["report"]),
        ("nightly/periodic-1700000000", ["nightly"]),
        ("a/dispatch-x/dispatch-1-0a1b2c3d", ["a", "a/dispatch-x"]),  # each place it could split
        ("/dispatch-1-0a1b2c3d", []),  # no parent ID before the suffix
    ],
)
def test_a_childs_change_names_its_parents_children_key(job_id: str, parents: list[str]) -> None:
    assert watches.parent_keys("ns", job_id) == [watches.children_key("ns", p) for p in parents]
