"""The base of every event, the append request, and the streams shared by several events'
modules (drover.model.events is the catalogue)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from drover.model.base import NomadModel


class Event(NomadModel):
    """Base of every event. `type` is the discriminator stored in the log."""

    type: str
    category: ClassVar[str] = ""

    def stream(self) -> str:
        raise NotImplementedError


@dataclass
class NewEvent:
    """An event to append; `expected_version` None means any, 0 a new stream, n the version the
    stream must be at (optimistic concurrency per stream)."""

    event: Event
    expected_version: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def job_stream(namespace: str, job_id: str) -> str:
    return f"job:{namespace}/{job_id}"


def dispatch_stream(namespace: str, job_id: str, idempotency_token: str) -> str:
    """The stream a dispatch of the job with an idempotency token appends its evals to: two
    dispatches with one token cannot both find no child of it (optimistic concurrency)."""
    return f"dispatch:{namespace}/{job_id}/{idempotency_token}"


def node_stream(node_id: str) -> str:
    return f"node:{node_id}"
