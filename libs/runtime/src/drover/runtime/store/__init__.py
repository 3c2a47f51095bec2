"""The event store: the append-only log in PostgreSQL, its projections, and migrations."""

from drover.model.events import NewEvent
from drover.runtime.store.eventstore import (
    ConcurrencyError,
    EventStore,
    FencedError,
    RecordedEvent,
    libpq_url,
)
from drover.runtime.store.migrate import SchemaMismatch, check_schema, migrate

__all__ = [
    "ConcurrencyError",
    "EventStore",
    "FencedError",
    "NewEvent",
    "RecordedEvent",
    "SchemaMismatch",
    "check_schema",
    "libpq_url",
    "migrate",
]
