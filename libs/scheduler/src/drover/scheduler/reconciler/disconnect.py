"""Allocs on clients that lost touch with the servers (the group's `disconnect` block):

- disconnecting: marked unknown when their node disconnects, with a follow-up eval
  (max-disconnect-timeout) for when `lost_after` runs out;
- reconnecting: back in time, each is kept or stopped against its replacements, as
  `disconnect.reconcile` says (drover.scheduler.reconciler.reconnecting); one that failed
  meanwhile, is no longer wanted or is of an older job version is stopped;
- lost with `stop_on_client_after`: their client stops them itself once it has been cut off
  that long, so their replacements wait until then (and the task's kill timeout) has passed.
"""

from __future__ import annotations

from drover.model import Allocation, AllocState, Evaluation
from drover.model.alloc import (
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_RUNNING,
    ALLOC_CLIENT_UNKNOWN,
    ALLOC_DESIRED_RUN,
    ALLOC_STATE_FIELD_CLIENT_STATUS,
)
from drover.model.defaults import DEFAULT_KILL_TIMEOUT, RECONCILE_BEST_SCORE
from drover.model.evaluation import TRIGGER_MAX_DISCONNECT_TIMEOUT
from drover.scheduler.reconciler.allocs import AllocSet, name_order
from drover.scheduler.reconciler.followups import new_followup_eval
from drover.scheduler.reconciler.inputs import ClusterState, EvalContext, JobState
from drover.scheduler.reconciler.reconnecting import pick_reconnecting, placement_score, replacement_chain
from drover.scheduler.reconciler.results import (
    ALLOC_NOT_NEEDED,
    ALLOC_RECONNECTED,
    ALLOC_RESCHEDULED,
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
        results.disconnect_updates[a.id] = a.model_copy(
            update={
                "client_status": ALLOC_CLIENT_UNKNOWN,
                "client_description": ALLOC_UNKNOWN,
                "alloc_states": _with_state(a, ALLOC_CLIENT_UNKNOWN, now),
                "followup_eval_id": evaluation.id,
            }
        )
    return out


def reconcile_reconnecting(
    reconnecting: AllocSet,
    group: AllocSet,
    job: JobState,
    cluster: ClusterState,
    now: int,
    results: ReconcileResults,
) -> tuple[AllocSet, AllocSet]:
    """Keep or stop each reconnecting alloc and its replacements (from `group`, the task
    group's allocs). Returns (the reconnected allocs, every alloc stopped here); each
    reconnecting alloc is in exactly one of them."""
    stop: AllocSet = {}

    def stopping(a: Allocation, description: str, client_status: str = "") -> None:
        if a.id not in stop:
            stop[a.id] = a
            results.stop.append(StopRequest(alloc=a, description=description, client_status=client_status))

    def score(a: Allocation) -> float | None:
        return placement_score(a, cluster.placement_scores)

    for orig in name_order(reconnecting):
        if not orig.server_terminal() and orig.client_status == ALLOC_CLIENT_FAILED:
            # It failed while cut off: stopped as failed; its replacement (or a new alloc) runs.
            stopping(orig, ALLOC_RESCHEDULED, ALLOC_CLIENT_FAILED)
            continue
        if _unwanted(orig, job):
            stopping(orig, ALLOC_NOT_NEEDED)
            continue
        tg = job.group_of(orig)
        reconcile = tg.disconnect.reconcile if tg is not None and tg.disconnect is not None else ""
        for repl in replacement_chain(orig, group):
            if repl.server_terminal():
                continue
            if pick_reconnecting(reconcile or RECONCILE_BEST_SCORE, orig, repl, tg, score) is repl:
                stopping(orig, ALLOC_NOT_NEEDED)
            else:
                stopping(repl, ALLOC_RECONNECTED)
    reconnect = {k: a for k, a in reconnecting.items() if k not in stop}
    for a in name_order(reconnect):
        # Recorded once its client says it runs, so that later evals know it reconnected; until
        # then it stays to reconnect (its replacements are already stopped).
        if a.client_status == ALLOC_CLIENT_RUNNING:
            results.reconnect_updates[a.id] = a.model_copy(
                update={"alloc_states": _with_state(a, ALLOC_CLIENT_RUNNING, now)}
            )
    return reconnect, stop


def _unwanted(a: Allocation, job: JobState) -> bool:
    """Whether a reconnecting alloc is to stop whatever its replacements: the servers no longer
    want it running, want it moved, or the job changed while it was cut off."""
    t = a.desired_transition
    current = job.job.version if job.job is not None else a.job_version
    return (
        a.desired_status != ALLOC_DESIRED_RUN
        or t.should_migrate()
        or t.should_reschedule()
        or t.should_force_reschedule()
        or a.job_version < current
    )


def client_stop_time(a: Allocation, job: JobState, now: int) -> int:
    """When the client of lost alloc `a` has surely stopped it by itself: `stop_on_client_after`
    and the longest kill timeout of its tasks after it was lost (now, when it is being marked
    lost); 0 when its group does not set stop_on_client_after (Nomad's WaitClientStop)."""
    tg = job.group_of(a)
    if tg is None or tg.disconnect is None or tg.disconnect.stop_on_client_after <= 0:
        return 0
    lost_at = next(
        (
            s.time
            for s in a.alloc_states
            if s.field == ALLOC_STATE_FIELD_CLIENT_STATUS and s.value == ALLOC_CLIENT_LOST
        ),
        now,
    )
    kill = max([DEFAULT_KILL_TIMEOUT, *(t.kill_timeout for t in tg.tasks)])
    return lost_at + tg.disconnect.stop_on_client_after + kill


def delay_by_stop_after(lost: AllocSet, job: JobState, now: int) -> list[tuple[Allocation, int]]:
    """The lost allocs whose client is still to stop them itself, each with when it will
    have: their group places nothing until then (Nomad's delayByStopAfter)."""
    out = []
    for a in name_order(lost):
        when = client_stop_time(a, job, now)
        if when > now:
            out.append((a, when))
    return out


def _with_state(a: Allocation, client_status: str, now: int) -> list[AllocState]:
    return [*a.alloc_states, AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value=client_status, time=now)]
