"""Alembic migrations, run programmatically (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config


def alembic_config(url: str) -> Config:
    # Alembic is imported only when migrating: every service imports this package, and
    # importing Alembic cost each one's start about 0.16 s.
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision`."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)
