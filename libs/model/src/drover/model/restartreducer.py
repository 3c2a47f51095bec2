"""How the restart events change the state (the one reducer's part for job restarts,
drover.model.reducer): a restart's record, and the allocs a batch signals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drover.model.alloc import DesiredTransition
from drover.model.deployment import Deployment
from drover.model.events import JobRestartDeleted, JobRestartSignaled, JobRestartStarted, JobRestartUpdated
from drover.model.jobrestart import RESTART_CANCELLED

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

DESC_DEPLOYMENT_STARTED = "Cancelled because deployment {} started"


def restart_started(state: StateWriter, index: int, ev: JobRestartStarted) -> None:
    r = ev.restart
    state.upsert_job_restart(r.model_copy(update={"create_index": index, "modify_index": index}))


def restart_signaled(state: StateWriter, index: int, ev: JobRestartSignaled) -> None:
    """Record the batch and signal its allocs. A batch already recorded (its number not the
    next) changes nothing: a signal is applied once, however often it was written."""
    r = state.job_restart(ev.restart_id)
    if r is None or r.terminal() or ev.batch_number != r.batch_number + 1:
        return
    ids = ev.alloc_ids()
    state.upsert_job_restart(
        r.model_copy(
            update={
                "batch_number": ev.batch_number,
                "batch": ids,
                "batch_signaled_at": ev.at,
                "batch_done_at": 0,
                "restarted_allocs": [*r.restarted_allocs, *ids],
                "updated_at": ev.at,
                "modify_index": index,
            }
        )
    )
    for alloc_id, req in ev.requests.items():
        old = state.alloc(alloc_id)
        if old is not None:
            state.upsert_alloc(old.model_copy(update={"restart_request": req, "modify_index": index}))
    migrate = DesiredTransition(migrate=True)
    for alloc_id in ev.migrate:
        old = state.alloc(alloc_id)
        if old is not None:
            merged = old.desired_transition.model_copy(update=migrate.model_dump(exclude_none=True))
            state.upsert_alloc(old.model_copy(update={"desired_transition": merged, "modify_index": index}))


def restart_updated(state: StateWriter, index: int, ev: JobRestartUpdated) -> None:
    r = state.job_restart(ev.restart_id)
    if r is None or r.terminal():
        return  # a terminal restart stays as it ended
    update: dict[str, object] = {"modify_index": index, "updated_at": ev.at or r.updated_at}
    if ev.status:
        update["status"] = ev.status
        update["status_description"] = ev.status_description
    if ev.batch_done_at:
        update["batch_done_at"] = ev.batch_done_at
    state.upsert_job_restart(r.model_copy(update=update))


def restart_deleted(state: StateWriter, index: int, ev: JobRestartDeleted) -> None:
    r = state.job_restart(ev.restart_id)
    if r is not None:
        state.delete_job_restart(r)


def cancel_for_deployment(state: StateWriter, index: int, dep: Deployment, at: int) -> None:
    """A deployment that starts cancels its job's restarts that have not ended (seed 001)."""
    for r in state.job_restarts_of(dep.namespace, dep.job_id):
        if not r.terminal():
            state.upsert_job_restart(
                r.model_copy(
                    update={
                        "status": RESTART_CANCELLED,
                        "status_description": DESC_DEPLOYMENT_STARTED.format(dep.id),
                        "updated_at": at or r.updated_at,
                        "modify_index": index,
                    }
                )
            )
