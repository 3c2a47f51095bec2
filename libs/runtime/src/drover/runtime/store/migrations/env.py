"""Alembic environment: online migrations against the URL the caller configured."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from drover.runtime.locks import MIGRATIONS_LOCK_KEY

config = context.config


def run() -> None:
    url = config.attributes["url"]
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=None)
        with context.begin_transaction():
            # Two processes migrating at once (make up starts several) take turns.
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATIONS_LOCK_KEY})")
            context.run_migrations()
    engine.dispose()


run()
