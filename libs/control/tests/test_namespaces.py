"""Namespace commands decided as Nomad decides them: a write refused with every problem in
Nomad's words, or appended after the namespace stream's version; a deletion refused for
`default`, for a namespace not there (404) and for one still holding something."""

from __future__ import annotations

import pytest

from drover.control.commands import namespaces as cmd
from drover.control.errors import Invalid, NotFound
from drover.model.events import NamespaceDeleted, NamespaceUpserted
from drover.model.namespace import Namespace
from drover.model.state import InMemoryState


class Reads:
    def __init__(self, *namespaces: Namespace, held: list[str] | None = None, version: int = 4) -> None:
        self.state = InMemoryState()
        for ns in namespaces:
            self.state.upsert_namespace(ns)
        self.held = held or []
        self.version = version

    def namespace(self, name: str) -> Namespace | None:
        return self.state.namespace(name)

    def namespace_stream_version(self, name: str) -> int:
        return self.version

    def namespace_holdings(self, name: str) -> list[str]:
        return self.held


def test_a_write_appends_after_the_stream_s_version_with_the_log_s_indexes() -> None:
    change = cmd.upsert(Reads(), Namespace(name="prod", description="d", create_index=5, modify_index=6))
    (new,) = change.events
    assert new.expected_version == 4 and isinstance(new.event, NamespaceUpserted)
    assert new.event.namespace == Namespace(name="prod", description="d")


def test_a_bad_write_lists_every_problem() -> None:
    with pytest.raises(Invalid) as refused:
        cmd.upsert(Reads(), Namespace(name="a b", quota="q"))
    assert refused.value.message.splitlines() == [
        'Invalid namespace "a b":',
        'invalid name "a b". Must match regex ^[a-zA-Z0-9-]{1,128}$',
        'namespace "a b" using non-existent quota "q"',
    ]


@pytest.mark.parametrize(
    ("name", "reads", "error", "message"),
    [
        ("default", Reads(), Invalid, "can not delete default namespace"),
        ("nope", Reads(), NotFound, "namespace not found"),
        ("prod", Reads(Namespace(name="prod"), held=["has jobs", "has variables"]), Invalid, "has jobs\nhas variables"),
    ],
)  # fmt: skip
def test_a_deletion_refused(name: str, reads: Reads, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as refused:
        cmd.delete(reads, name)
    assert str(refused.value) == message


def test_a_deletion_appends_after_the_stream_s_version() -> None:
    (new,) = cmd.delete(Reads(Namespace(name="prod"), version=9), "prod").events
    assert new.expected_version == 9 and new.event == NamespaceDeleted(name="prod")
