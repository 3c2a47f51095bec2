"""Invariants checked from the event log itself, replayed one event at a time."""

from __future__ import annotations

from collections import Counter

from drover.model.events import PlanApplied
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.runtime.store import EventStore


def check_log(store: EventStore) -> InMemoryState:
    """Replay the log; after every plan, no node it touched may be over-committed. Every alloc
    is created once. Returns the final state."""
    state = InMemoryState()
    created: Counter[str] = Counter()
    for rec in store.iter_all():
        event = rec.event
        if isinstance(event, PlanApplied):
            for a in event.allocs:
                if state.alloc(a.id) is None:
                    created[a.id] += 1
        apply(state, rec.position, event)
        if isinstance(event, PlanApplied):
            for node_id in {a.node_id for a in event.allocs}:
                node = state.node(node_id)
                assert node is not None, f"alloc placed on unknown node {node_id} at {rec.position}"
                used, cap = state.node_usage(node_id), node.capacity()
                assert all(u <= c for u, c in zip(used, cap, strict=True)), (
                    f"node {node_id} over-committed at index {rec.position}: {used} > {cap}"
                )
    dupes = [k for k, n in created.items() if n > 1]
    assert not dupes, f"allocs created twice: {dupes}"
    return state


def live_names_unique(state: InMemoryState) -> None:
    names: Counter[tuple[str, str]] = Counter()
    for a in state.allocs.values():
        if not a.terminal_status():
            names[(a.job_id, a.name)] += 1
    dupes = [k for k, n in names.items() if n > 1]
    assert not dupes, f"duplicate live allocs: {dupes}"
