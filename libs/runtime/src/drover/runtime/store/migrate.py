"""Alembic migrations, run programmatically (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import URL

# The migration this code needs the database at (a test keeps it equal to the newest one).

SCHEMA_HEAD = "ui_0001"


class SchemaMismatch(RuntimeError):
    """The database is at another migration than the code that uses it."""


def alembic_config(url: str | URL) -> Config:
    # Alembic is imported only when migrating: every service imports this package, and
    # importing Alembic cost each one's start about 0.16 s.
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    # Handed over as it is (migrations/env.py): never rendered into text with its password.
    cfg.attributes["url"] = url
    return cfg


def migrate(url: str | URL, revision: str = "head") -> None:
    """Bring the database at `url` to `revision`."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def check_schema(url: str | URL) -> None:
    """Refuse to run against a database at another migration than SCHEMA_HEAD: a service
    appending to a log it does not know the form of would fail on its first append with a
    database error (or, were the database behind it, write what the code before expects).
    A database not reachable yet is left to the service, which waits for it as it always does."""
    import psycopg

    from drover.runtime.store.eventstore import libpq_url

    try:
        with psycopg.connect(libpq_url(url), connect_timeout=5) as conn:
            try:
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            except psycopg.errors.UndefinedTable:
                row = None
    except psycopg.OperationalError:
        return
    found = row[0] if row else None
    if found != SCHEMA_HEAD:
        raise SchemaMismatch(
            f"the database is at migration {found or '(none)'}; this Drover needs {SCHEMA_HEAD}: "
            "run `drover admin migrate` (`drover up` migrates before it starts the services)"
        )
