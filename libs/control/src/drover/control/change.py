"""What a command decides: the events to append, in one transaction, and the evals among them
(their IDs answer the request)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from drover.model import Evaluation
from drover.model.events import EvalsUpserted, Event, NewEvent


@dataclass
class Change:
    events: list[NewEvent] = field(default_factory=list)
    evals: list[Evaluation] = field(default_factory=list)

    @classmethod
    def of(cls, events: Sequence[Event | NewEvent], evals: Sequence[Evaluation] = ()) -> Change:
        """`events`, then the evals in an EvalsUpserted of their own if there are any."""
        items = [e if isinstance(e, NewEvent) else NewEvent(e) for e in events]
        if evals:
            items.append(NewEvent(EvalsUpserted(evals=list(evals))))
        return cls(items, list(evals))

    @property
    def eval_ids(self) -> list[str]:
        return [e.id for e in self.evals]
