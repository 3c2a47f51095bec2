"""The cluster snapshot the scheduler reads: defined in drover.model, shared with every
service's replica and the event reducer."""

from drover.model.state import InMemoryState, JobKey, StateSnapshot

__all__ = ["InMemoryState", "JobKey", "StateSnapshot"]
