"""`drover admin` against a real database: the rebuilt projections equal the live ones; a
database behind this code's migration is refused by the services and brought up to it by
`drover admin migrate`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from typer.testing import CliRunner

from drover.cli.main import app
from drover.model import Node
from drover.model.events import NodeRegistered, NodeStatusUpdated
from drover.runtime.store import EventStore, SchemaMismatch, check_schema
from drover.runtime.store.migrate import SCHEMA_HEAD, alembic_config


def test_admin_rebuild(store: EventStore, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store.append([NodeRegistered(node=Node(id=f"n{i}")) for i in range(5)])
    store.append([NodeStatusUpdated(node_id="n1", status="down")])
    before = store.projection_dump()
    monkeypatch.setenv("DROVER_DATABASE_URL", database_url)
    result = CliRunner().invoke(app, ["admin", "rebuild"])
    assert result.exit_code == 0, result.output
    assert "rebuilt projections from 6 events" in result.output
    assert store.projection_dump() == before


def test_services_refuse_a_database_at_another_migration_until_it_is_migrated(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SCHEMA_HEAD is the newest migration there is.
    assert ScriptDirectory.from_config(alembic_config(database_url)).get_current_head() == SCHEMA_HEAD
    check_schema(database_url)
    command.downgrade(alembic_config(database_url), "0004")
    with pytest.raises(SchemaMismatch, match=f"at migration 0004; this Drover needs {SCHEMA_HEAD}"):
        check_schema(database_url)
    # A service started against it exits at once, saying why (it never reaches NATS).
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    env |= {"DROVER_DATABASE_URL": database_url, "DROVER_NATS_URL": "nats://127.0.0.1:1"}
    for service in ("drover.relay", "drover.api"):
        proc = subprocess.run(
            [sys.executable, "-m", service], env=env, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "drover admin migrate" in proc.stdout + proc.stderr
    monkeypatch.setenv("DROVER_DATABASE_URL", database_url)
    result = CliRunner().invoke(app, ["admin", "migrate"])
    assert result.exit_code == 0, result.output
    assert f"at migration {SCHEMA_HEAD}" in result.output
    check_schema(database_url)


@pytest.mark.parametrize("args", [["--help"], ["job", "restart", "-h"]])
def test_help_lists_its_names_in_order_whatever_the_hash_seed(args: list[str]) -> None:
    """Typer's bundled Click gathers the help option's names in a set: under these two seeds
    `-help,-h` and `-h,-help` came out (drover.cli.main._HelpInOrder keeps the order given)."""
    drover = os.path.join(os.path.dirname(sys.executable), "drover")
    seen = set()
    for seed in ("7", "14"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "COLUMNS": "100"}
        out = subprocess.run([drover, *args], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "-h,-help" in out.stdout, out.stdout + out.stderr
        seen.add(out.stdout)
    assert len(seen) == 1
