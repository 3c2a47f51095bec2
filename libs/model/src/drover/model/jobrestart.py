"""Job restarts: restarting a whole job's allocs in batches (what `nomad job restart` does from
the CLI), here as a first-class object
in the log that many operators can see, pause, resume, cancel and follow, and that outlives
whoever started it. The job restart watcher drives it (drover.control.leader.jobrestartwatcher)."""

from __future__ import annotations

import uuid

from pydantic import Field

from drover.model.base import NomadModel

RESTART_RUNNING = "running"
RESTART_PAUSED = "paused"
RESTART_CANCELLED = "cancelled"
RESTART_COMPLETE = "complete"
RESTART_FAILED = "failed"
RESTART_TERMINAL = (RESTART_CANCELLED, RESTART_COMPLETE, RESTART_FAILED)

ON_ERROR_PAUSE = "pause"
ON_ERROR_FAIL = "fail"

# The namespace of the request IDs a restart sends its allocs (see `request_id`).
_REQUESTS = uuid.UUID("6d0c3c86-97a1-4b6e-9d3e-5f1b7c2a4e10")


class JobRestart(NomadModel):
    """One restart of a job: its options, where it stands, and what it has restarted."""

    id: str = ""
    namespace: str = "default"
    job_id: str = ""
    batch_size: int = 1
    batch_wait: int = 0
    # Which allocs and tasks: the groups named (all if none); the tasks named, else the
    # running ones, or every task with all_tasks. With reschedule, allocs are replaced
    # (stopped and placed again) instead of restarted in place.
    groups: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)
    all_tasks: bool = False
    reschedule: bool = False
    on_error: str = ON_ERROR_PAUSE
    health_check: bool = False
    status: str = RESTART_RUNNING
    status_description: str = ""
    # Every alloc signalled so far, recorded in the same append as its signal.
    restarted_allocs: list[str] = Field(default_factory=list)
    # The batch in flight (or last done): its number, allocs, when it was signalled, and
    # when it was seen done (0 while in flight).
    batch_number: int = 0
    batch: list[str] = Field(default_factory=list)
    batch_signaled_at: int = 0
    batch_done_at: int = 0
    started_at: int = 0
    updated_at: int = 0
    create_index: int = 0
    modify_index: int = 0

    def terminal(self) -> bool:
        return self.status in RESTART_TERMINAL

    def in_flight(self) -> bool:
        """A batch was signalled and is not yet done."""
        return bool(self.batch) and not self.batch_done_at


def request_id(restart_id: str, alloc_id: str) -> str:
    """The ID of the restart request a restart sends an alloc: derived, not drawn, so a signal
    written again (a new leader redoing a pass) asks for the same restart, which the node's
    agent acts on once."""
    return str(uuid.uuid5(_REQUESTS, f"{restart_id}/{alloc_id}"))
