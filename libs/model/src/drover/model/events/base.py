"""What every event declares, in one place: its log stream (the aggregate it belongs to), how it
changes the state (`apply_to`, the one reducer's part for it), the rows it reads (`reads`, which
an append prefetches) and the Type of the events Nomad's event stream carries for it
(`nomad_event_type`). Nothing else names event types: the catalogue's decoding, the reducer,
the prefetch and the event stream all go through these (the stream's objects are the rows the
event changed, as Nomad derives its stream from the changed table rows).

A class that leaves any of these out is refused when it is defined."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from drover.model.base import NomadModel

if TYPE_CHECKING:
    from drover.model.evaluation import Evaluation
    from drover.model.statewriter import StateWriter

JobKey = tuple[str, str]

# Every event type by its `type`: the catalogue (drover.model.events) decodes by it.
EVENT_TYPES: dict[str, type[Event]] = {}
_DECLARED = ("stream", "apply_to", "reads")


@dataclass
class Reads:
    """The rows a batch of events reads, by table; what an append prefetches with its insert.
    Anything left out is read when asked for, one query at a time."""

    allocs: list[str] = field(default_factory=list)
    evals: list[str] = field(default_factory=list)
    deployments: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    jobs: list[JobKey] = field(default_factory=list)
    restarts: list[str] = field(default_factory=list)
    # Jobs whose restarts a new deployment cancels.
    restarts_of: list[JobKey] = field(default_factory=list)
    # Placements the scheduler just created (CreateIndex 0: a fresh ID), taken as absent when
    # `trust_new` is set.
    new: list[str] = field(default_factory=list)
    # Node pools by name (the built-in ones are never rows).
    node_pools: list[str] = field(default_factory=list)
    # Rows the garbage collector's events delete, looked up by reference (no documents).
    refs: dict[str, list[str]] = field(default_factory=dict)
    trust_new: bool = False


class Event(NomadModel):
    """Base of every event. `type` is the discriminator stored in the log."""

    type: str
    # The Type of the events Nomad's event stream carries for this event (Nomad names them
    # after the request that made the change, for every object it changed); None: none.
    nomad_event_type: ClassVar[str | None]
    # Another decoding of a type declared elsewhere (a replica's leaner form): not registered,
    # and bound to nothing but its fields.
    decoding_of: ClassVar[builtins.type[Event] | None] = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        name = cls.model_fields["type"].default
        if not isinstance(name, str) or cls.decoding_of is not None:
            return  # a family's base (no type of its own), or a decoding of a declared type
        known = EVENT_TYPES.get(name)
        if known is not None:
            if issubclass(cls, known):
                return  # a leaner decoding of the same event (PlanApplied's for replicas)
            raise TypeError(f"event type {name!r} is declared twice ({known.__name__}, {cls.__name__})")
        missing = [m for m in _DECLARED if getattr(cls, m) is getattr(Event, m)]
        if not hasattr(cls, "nomad_event_type"):
            missing.append("nomad_event_type")
        if missing:
            raise TypeError(f"event {cls.__name__} does not declare {', '.join(missing)}")
        EVENT_TYPES[name] = cls

    def stream(self) -> str:
        """The log stream it is appended to: its aggregate, for optimistic concurrency."""
        raise NotImplementedError

    def apply_to(self, state: StateWriter, index: int) -> None:
        """Change `state` as this event, recorded at `index` (the cluster index), does."""
        raise NotImplementedError

    def reads(self, r: Reads) -> None:
        """Add to `r` the rows `apply_to` reads (those it can name before reading any)."""
        raise NotImplementedError

    def evals_made(self) -> list[Evaluation]:
        """The evals it creates or updates (the broker's work)."""
        return []

    def to_json(self, *, metrics: bool = True) -> str:
        """Its members as JSON, without those that hold their default (decoding restores
        them); `metrics`: False leaves out the placement metrics of an event that has any."""
        return self.model_dump_json(by_alias=True, exclude_defaults=True)

    def metrics_object(self) -> str | None:
        """The placement metrics the log keeps beside the event (None: it has none)."""
        return None


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


def restart_stream(namespace: str, job_id: str) -> str:
    """The stream of a job's restarts: one per job, so that two restarts started at once
    cannot both find none running (optimistic concurrency)."""
    return f"jobrestart:{namespace}/{job_id}"
