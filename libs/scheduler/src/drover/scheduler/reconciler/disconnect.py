"""Allocs on disconnected clients: marking them unknown when their node disconnects, and
choosing between an alloc and its replacement when the node comes back (`disconnect.reconcile`)."""

from __future__ import annotations

from drover.model import Allocation, AllocState, Evaluation
from drover.model.alloc import (
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_RUNNING,
    ALLOC_CLIENT_UNKNOWN,
    ALLOC_DESIRED_RUN,
    ALLOC_STATE_FIELD_CLIENT_STATUS,
)
from drover.model.evaluation import TRIGGER_MAX_DISCONNECT_TIMEOUT
from drover.scheduler.reconciler.allocs import AllocSet, name_order
from drover.scheduler.reconciler.followups import new_followup_eval
from drover.scheduler.reconciler.inputs import EvalContext, JobState
from drover.scheduler.reconciler.results import (
    ALLOC_NOT_NEEDED,
    ALLOC_RECONNECTED,
    ALLOC_UNKNOWN,
    DISCONNECT_TIMEOUT_FOLLOWUP_DESC,
    ReconcileResults,
    StopRequest,
)


def disconnect_timeout_evals(
    disconnecting: AllocSet, job: JobState, ctx: EvalContext, results: ReconcileResults
) -> dict[str, str]:
    """Mark the disconnecting allocs unknown, with one follow-up eval per expiry time (when
    `lost_after` runs out). Returns each alloc's follow-up eval ID."""
    out: dict[str, str] = {}
    if not disconnecting:
        return out
    now = ctx.now
    by_time: dict[int, Evaluation] = {}
    for a in name_order(disconnecting):
        expiry = now + job.lost_after(a)
        evaluation = by_time.get(expiry)
        if evaluation is None:
            evaluation = new_followup_eval(
                job, ctx, TRIGGER_MAX_DISCONNECT_TIMEOUT, expiry, DISCONNECT_TIMEOUT_FOLLOWUP_DESC
            )
            by_time[expiry] = evaluation
            results.followup_evals.append(evaluation)
        out[a.id] = evaluation.id
        states = [
            *a.alloc_states,
            AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value=ALLOC_CLIENT_UNKNOWN, time=now),
        ]
        results.disconnect_updates[a.id] = a.model_copy(
            update={
                "client_status": ALLOC_CLIENT_UNKNOWN,
                "client_description": ALLOC_UNKNOWN,
                "alloc_states": states,
                "followup_eval_id": evaluation.id,
            }
        )
    return out


def reconcile_reconnecting(
    reconnecting: AllocSet, group: AllocSet, job: JobState, now: int, results: ReconcileResults
) -> tuple[AllocSet, AllocSet]:
    """For each reconnecting alloc keep it or its replacement, as `disconnect.reconcile` says.
    Returns (reconnected originals to keep, replacements or originals stopped)."""
    keep: AllocSet = {}
    stopped: AllocSet = {}
    replacements: dict[str, Allocation] = {}
    for a in group.values():
        if a.previous_allocation and not a.terminal_status():
            replacements[a.previous_allocation] = a
    for orig in name_order(reconnecting):
        repl = replacements.get(orig.id)
        desired = results.desired(orig.task_group)
        if _keep_original(orig, repl, job):
            keep[orig.id] = orig
            states = [
                *orig.alloc_states,
                AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value=ALLOC_CLIENT_RUNNING, time=now),
            ]
            results.reconnect_updates[orig.id] = orig.model_copy(update={"alloc_states": states})
            desired.reconnect += 1
            if repl is not None:
                results.stop.append(StopRequest(alloc=repl, description=ALLOC_RECONNECTED))
                desired.stop += 1
                stopped[repl.id] = repl
        else:
            if not orig.server_terminal():
                results.stop.append(StopRequest(alloc=orig, description=ALLOC_NOT_NEEDED))
                desired.stop += 1
            stopped[orig.id] = orig
    return keep, stopped


def _keep_original(orig: Allocation, repl: Allocation | None, job: JobState) -> bool:
    """Whether a reconnecting alloc wins over its replacement (`repl`, if any)."""
    if orig.client_status == ALLOC_CLIENT_FAILED or orig.desired_status != ALLOC_DESIRED_RUN:
        return False
    if repl is None:
        return True
    tg = job.group_of(orig)
    mode = tg.disconnect.reconcile if tg is not None and tg.disconnect is not None else "best_score"
    if mode == "keep_replacement":
        return False
    if mode == "longest_running":
        return _started(orig) <= _started(repl) or _started(repl) == 0
    # best_score and keep_original: the original was placed by the scheduler's own choice and
    # is still running, so it wins; the replacement goes.
    return True


def _started(a: Allocation) -> int:
    starts = [ts.started_at for ts in a.task_states.values() if ts.started_at]
    return min(starts) if starts else 0
