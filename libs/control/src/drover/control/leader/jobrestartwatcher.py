"""The job restart watcher's decisions, pure: given a running job restart, its job and
the job's allocs, what to do now - signal the next batch, note the batch in flight done, wait
(for the batch, its health, or BatchWait), pause or fail it on an error, or complete it.

- A batch is the next BatchSize live allocs of the chosen groups, by name, not yet restarted
  and created before the restart (those created after count as restarted already).
- In place, an alloc is done when each task the agent restarted for the restart's request
  (its "Restart Signaled" event names the request) has started again; with Reschedule, when
  its replacement runs. An alloc the servers stopped meanwhile is done too.
- With HealthCheck, a restarted task counts only once it has run min_healthy_time, and a
  batch not healthy within healthy_deadline of its signal is an error (the group's update
  block, or Nomad's defaults).
- An error - an alloc that failed or was lost instead of running again, or a batch not
  healthy in time - pauses the restart (OnError "pause") or fails it ("fail"), saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model import Allocation, Evaluation, Job
from drover.model.alloc import TASK_STATE_RUNNING, AllocRestartRequest, TaskState
from drover.model.defaults import default_update_strategy
from drover.model.evaluation import TRIGGER_ALLOC_STOP, job_eval
from drover.model.events import Event, JobRestartSignaled, JobRestartUpdated
from drover.model.jobrestart import (
    ON_ERROR_FAIL,
    RESTART_CANCELLED,
    RESTART_COMPLETE,
    RESTART_FAILED,
    RESTART_PAUSED,
    RESTART_RUNNING,
    JobRestart,
    request_id,
)

SIGNALED = "Restart Signaled"
STARTED = "Started"
DESC_JOB_STOPPED = "Cancelled because the job was stopped"


@dataclass
class JobRestartStep:
    """What the watcher should write for one restart, and when to look again (0: at the next
    change)."""

    events: list[Event] = field(default_factory=list)
    evals: list[Evaluation] = field(default_factory=list)
    deadline: int = 0


@dataclass
class _Progress:
    done: bool = False
    error: str = ""
    deadline: int = 0


def _update(r: JobRestart, now: int, **fields: object) -> JobRestartUpdated:
    return JobRestartUpdated(restart_id=r.id, namespace=r.namespace, job_id=r.job_id, at=now, **fields)


def watch_job_restart(r: JobRestart, job: Job | None, allocs: list[Allocation], now: int) -> JobRestartStep:
    """Decide for restart `r` of `job`; `allocs` are the job's allocs (replacements too)."""
    if r.status != RESTART_RUNNING:
        return JobRestartStep()
    if job is None or job.stop:
        return JobRestartStep(
            [_update(r, now, status=RESTART_CANCELLED, status_description=DESC_JOB_STOPPED)]
        )
    by_id = {a.id: a for a in allocs}
    if r.in_flight():
        progress = batch_progress(r, job, by_id, now)
        if progress.error:
            status = RESTART_FAILED if r.on_error == ON_ERROR_FAIL else RESTART_PAUSED
            desc = progress.error
            return JobRestartStep([_update(r, now, status=status, status_description=desc)])
        if not progress.done:
            return JobRestartStep(deadline=progress.deadline)
        done = _update(r, now, batch_done_at=now)
        if r.batch_wait > 0:
            return JobRestartStep([done], deadline=now + r.batch_wait)
        # No wait owed: the next batch goes in the same append (a pass less per batch).
        after = _next(r.model_copy(update={"batch_done_at": now}), job, allocs, now)
        return JobRestartStep([done, *after.events], after.evals, after.deadline)
    if r.batch and now < r.batch_done_at + r.batch_wait:
        return JobRestartStep(deadline=r.batch_done_at + r.batch_wait)
    return _next(r, job, allocs, now)


def _next(r: JobRestart, job: Job, allocs: list[Allocation], now: int) -> JobRestartStep:
    """Signal the next batch; or complete the restart when nothing is left to restart."""
    batch, waiting = next_batch(r, job, allocs)
    if batch:
        return _signal(r, job, batch, now)
    if waiting:
        return JobRestartStep()  # allocs not yet running: they are signalled once they run
    desc = f"Restarted {len(r.restarted_allocs)} allocs in {r.batch_number} batches"
    return JobRestartStep([_update(r, now, status=RESTART_COMPLETE, status_description=desc)])


def chosen(r: JobRestart, a: Allocation) -> bool:
    """Whether alloc `a` is one the restart may restart (its group chosen)."""
    return not r.groups or a.task_group in r.groups


def next_batch(r: JobRestart, job: Job, allocs: list[Allocation]) -> tuple[list[Allocation], bool]:
    """The next batch (live, running allocs of the chosen groups, not restarted, created before
    the restart), and whether allocs are left that are not running yet."""
    done = set(r.restarted_allocs)
    todo = [
        a
        for a in allocs
        if chosen(r, a) and not a.terminal_status() and a.id not in done and a.create_index <= r.create_index
    ]
    running = sorted((a for a in todo if a.client_status == "running"), key=lambda a: (a.name, a.id))
    return running[: r.batch_size], len(running) < len(todo)


def _signal(r: JobRestart, job: Job, batch: list[Allocation], now: int) -> JobRestartStep:
    """Signal `batch`: a restart request per alloc, or (with reschedule) its mark to migrate and
    an alloc-stop eval, written in one event with the record of the batch."""
    common = {
        "restart_id": r.id,
        "namespace": r.namespace,
        "job_id": r.job_id,
        "batch_number": r.batch_number + 1,
    }
    if r.reschedule:
        event = JobRestartSignaled(**common, migrate=[a.id for a in batch], at=now)
        return JobRestartStep([event], [job_eval(job, TRIGGER_ALLOC_STOP, now)])
    named = list(r.tasks)
    requests = {
        a.id: AllocRestartRequest(
            id=request_id(r.id, a.id),
            task_name=named[0] if len(named) == 1 else "",
            task_names=named if len(named) > 1 else [],
            all_tasks=r.all_tasks,
            time=now,
        )
        for a in batch
    }
    return JobRestartStep([JobRestartSignaled(**common, requests=requests, at=now)])


def batch_progress(r: JobRestart, job: Job, allocs: dict[str, Allocation], now: int) -> _Progress:
    """Whether the batch in flight is done, has an error, or when to look again (the earliest
    time one of its allocs needs a look: a health deadline)."""
    deadlines = []
    done = True
    for alloc_id in r.batch:
        a = allocs.get(alloc_id)
        if a is None or (a.server_terminal() and not r.reschedule):
            continue  # gone, or stopped by the servers meanwhile
        p = _replaced(r, job, a, allocs, now) if r.reschedule else _restarted(r, job, a, now)
        if p.error:
            return p
        done = done and p.done
        if p.deadline:
            deadlines.append(p.deadline)
    return _Progress(done=done, deadline=0 if done else min(deadlines, default=0))


def _failed(a: Allocation) -> str:
    if a.client_status in ("failed", "lost"):
        return f"alloc {a.id} ({a.name}) {a.client_status} instead of running again"
    return ""


def _health(r: JobRestart, job: Job, a: Allocation, started: list[int], now: int) -> _Progress:
    """With HealthCheck: done once every restarted task ran min_healthy_time; an error past
    healthy_deadline from the batch's signal."""
    tg = job.lookup_task_group(a.task_group)
    update = tg.update if tg is not None and tg.update is not None else default_update_strategy()
    healthy_at = max(started) + update.min_healthy_time
    if now >= healthy_at:
        return _Progress(done=True)
    limit = r.batch_signaled_at + update.healthy_deadline
    if update.healthy_deadline and now >= limit:
        return _Progress(error=f"alloc {a.id} ({a.name}) not healthy by its deadline")
    return _Progress(deadline=min(healthy_at, limit) if update.healthy_deadline else healthy_at)


def _restarted(r: JobRestart, job: Job, a: Allocation, now: int) -> _Progress:
    if why := _failed(a):
        return _Progress(error=why)
    req = request_id(r.id, a.id)
    started: list[int] = []
    for ts in a.task_states.values():
        at = started_after(ts, req)
        if at is None:
            continue
        if at == 0 or ts.state != TASK_STATE_RUNNING:
            return _Progress()  # signalled, not running again yet
        started.append(at)
    if not started:
        return _Progress()  # the agent has not acted on it yet
    return _health(r, job, a, started, now) if r.health_check else _Progress(done=True)


def started_after(ts: TaskState, req: str) -> int | None:
    """When the task started again after the restart request `req`: None if the request did
    not reach it, 0 if it has not started since."""
    signaled = False
    for e in ts.events:
        if e.type == SIGNALED and e.details.get("restart_id") == req:
            signaled = True
        elif signaled and e.type == STARTED:
            return e.time
    return 0 if signaled else None


def _replaced(r: JobRestart, job: Job, a: Allocation, allocs: dict[str, Allocation], now: int) -> _Progress:
    new = allocs.get(a.next_allocation) if a.next_allocation else None
    if new is None:
        return _Progress()
    if why := _failed(new):
        return _Progress(error=why)
    if new.client_status != "running":
        return _Progress()
    if not r.health_check:
        return _Progress(done=True)
    started = [ts.started_at for ts in new.task_states.values() if ts.state == TASK_STATE_RUNNING]
    return _health(r, job, new, started, now) if started else _Progress()
