"""The one reducer: how each event changes the cluster state.

Both the Postgres projections (written in the appending transaction) and every service's
in-memory replica apply events through `apply`, so they cannot disagree. Each event's own
effect is declared with the event (`Event.apply_to`, drover.model.events).
"""

from __future__ import annotations

from drover.model.events import Event
from drover.model.statewriter import StateWriter as StateWriter


def apply(state: StateWriter, position: int, event: Event) -> None:
    """Apply one event recorded at `position` (the cluster index)."""
    state.bump(position)
    event.apply_to(state, position)
