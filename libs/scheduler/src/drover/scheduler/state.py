"""The cluster snapshot the scheduler reads: defined in drover.common, shared with every
service's replica and the event reducer."""

from drover.common.state import InMemoryState, JobKey, StateSnapshot

__all__ = ["InMemoryState", "JobKey", "StateSnapshot"]
