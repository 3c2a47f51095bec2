"""System commands (Nomad's System endpoint): force a garbage collection."""

from __future__ import annotations

from drover.control.change import Change
from drover.model.evaluation import CORE_JOB_FORCE_GC, core_eval


def force_gc(now: int) -> Change:
    """PUT /v1/system/gc: a force-gc core eval, for the collector to run every pass of with no
    age needed (Nomad's System.GarbageCollect)."""
    return Change.of([], [core_eval(CORE_JOB_FORCE_GC, now)])
