"""`drover admin rebuild` against a real database: the rebuilt projections equal the live ones."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from drover.cli.main import app
from drover.common import Node
from drover.common.events import NodeRegistered, NodeStatusUpdated
from drover.common.store import EventStore


def test_admin_rebuild(store: EventStore, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store.append([NodeRegistered(node=Node(id=f"n{i}")) for i in range(5)])
    store.append([NodeStatusUpdated(node_id="n1", status="down")])
    before = store.projection_dump()
    monkeypatch.setenv("DROVER_DATABASE_URL", database_url)
    result = CliRunner().invoke(app, ["admin", "rebuild"])
    assert result.exit_code == 0, result.output
    assert "rebuilt projections from 6 events" in result.output
    assert store.projection_dump() == before
