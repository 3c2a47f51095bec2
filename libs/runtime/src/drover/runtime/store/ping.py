"""Whether PostgreSQL answers, and if not why (an API's health check)."""

from __future__ import annotations

import psycopg
from sqlalchemy.engine import URL

from drover.runtime.store.eventstore import libpq_url


def postgres_problem(url: str | URL, timeout: int) -> str:
    """ "" if a new connection to `url` answers a query within `timeout` seconds; otherwise the
    driver's first line (the host and the failure, never the password)."""
    try:
        with psycopg.connect(libpq_url(url), connect_timeout=timeout) as conn:
            conn.execute("SELECT 1")
    except Exception as e:
        return (str(e).strip().splitlines() or [type(e).__name__])[0]
    return ""
