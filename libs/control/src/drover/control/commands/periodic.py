"""Forcing a periodic job's launch now (Nomad's periodic force): the launch the dispatcher
would make (drover.control.leader.periodic), for this second."""

from __future__ import annotations

from drover.control.commands.reads import ClusterReads
from drover.control.errors import Conflict, Invalid, NotFound
from drover.control.leader.periodic import LaunchChange, child_id, is_active, launch
from drover.model.periodic import SECOND


def force(reads: ClusterReads, namespace: str, job_id: str, now: int) -> LaunchChange:
    """Launch a periodic job now (Nomad's periodic force), whatever its ProhibitOverlap says."""
    parent = reads.job(namespace, job_id)
    if parent is None:
        raise NotFound("job not found")
    if parent.periodic is None:
        raise Invalid(f"job {job_id!r} is not periodic")
    if not is_active(parent):
        why = "stopped" if parent.stop else "its periodic block is disabled"
        raise Invalid(f"job {job_id!r} is not launched periodically: {why}")
    at = now - now % SECOND
    if reads.job_stream_version(namespace, child_id(job_id, at)):
        raise Conflict(f"job {job_id!r} was launched at {at // SECOND} already; try again in a second")
    return launch(parent, at, now)
