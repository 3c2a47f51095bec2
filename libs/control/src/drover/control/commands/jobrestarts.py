"""Job restart commands: start a restart of a job's allocs in batches, pause, resume
and cancel it. The job restart watcher does the restarting (drover.control.leader.jobrestartwatcher).

A restart is refused while the job has an active deployment or another restart that has not
ended (409); two started at once cannot both pass: each appends after the version of the job's
restart stream it read."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field

from drover.control.change import Change
from drover.control.commands.reads import ClusterReads
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Job
from drover.model.durations import parse_duration
from drover.model.events import JobRestartStarted, JobRestartUpdated, NewEvent
from drover.model.jobrestart import (
    ON_ERROR_FAIL,
    ON_ERROR_PAUSE,
    RESTART_CANCELLED,
    RESTART_PAUSED,
    RESTART_RUNNING,
    JobRestart,
)


@dataclass
class JobRestartOptions:
    """A restart as asked for: BatchSize a count or "n%" of the allocs to restart (rounded up,
    as Nomad's CLI does), BatchWait nanoseconds or a duration ("30s")."""

    batch_size: int | str = 1
    batch_wait: int | str = 0
    groups: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    all_tasks: bool = False
    reschedule: bool = False
    on_error: str = ON_ERROR_PAUSE
    health_check: bool = False


@dataclass
class JobRestartChange(Change):
    restart: JobRestart | None = None


def _batch_size(value: int | str, problems: list[str]) -> tuple[int, bool]:
    """(count or percentage, whether a percentage)."""
    text = str(value).strip()
    percent = text.endswith("%")
    digits = text[:-1] if percent else text
    if isinstance(value, bool) or not digits.isdigit() or not digits.isascii():
        problems.append(f'BatchSize must be a count or a percentage ("25%"), not {value!r}')
        return 1, False
    n = int(digits)
    if n < 1 or (percent and n > 100):
        problems.append(
            f"BatchSize must be at least 1{' and at most 100%' if percent else ''}, not {value!r}"
        )
    return n, percent


def _batch_wait(value: int | str, problems: list[str]) -> int:
    if isinstance(value, bool):
        problems.append(f'BatchWait must be a duration ("30s") or nanoseconds, not {value!r}')
        return 0
    try:
        wait = value if isinstance(value, int) else parse_duration(value)
    except ValueError:
        problems.append(f'BatchWait must be a duration ("30s") or nanoseconds, not {value!r}')
        return 0
    if wait < 0:
        problems.append(f"BatchWait must not be negative, not {value!r}")
    return wait


def _scope_problems(job: Job, opts: JobRestartOptions) -> list[str]:
    """Groups, tasks and the options that exclude each other."""
    problems = [
        f"Group {g!r} is not a task group of job {job.id!r}"
        for g in opts.groups
        if job.lookup_task_group(g) is None
    ]
    groups = [tg for tg in job.task_groups if not opts.groups or tg.name in opts.groups]
    for t in opts.tasks:
        problems += [
            f"Task {t!r} is not in group {tg.name!r}" for tg in groups if t not in {x.name for x in tg.tasks}
        ]
    if opts.tasks and opts.all_tasks:
        problems.append("Tasks cannot be named with AllTasks")
    if opts.tasks and opts.reschedule:
        problems.append("Tasks cannot be named with Reschedule: a replacement runs every task")
    if opts.on_error not in (ON_ERROR_PAUSE, ON_ERROR_FAIL):
        problems.append(f"OnError must be {ON_ERROR_PAUSE!r} or {ON_ERROR_FAIL!r}, not {opts.on_error!r}")
    return problems


def start(
    reads: ClusterReads, namespace: str, job_id: str, opts: JobRestartOptions, now: int
) -> JobRestartChange:
    """Start restarting the job's allocs, BatchSize at a time."""
    job = reads.job(namespace, job_id)
    if job is None:
        raise NotFound("job not found")
    problems: list[str] = []
    size, percent = _batch_size(opts.batch_size, problems)
    wait = _batch_wait(opts.batch_wait, problems)
    problems += _scope_problems(job, opts)
    if problems:
        raise Invalid.of(problems, "Restart is invalid:")
    version = reads.restart_stream_version(namespace, job_id)  # before the restarts it guards
    _conflicts(reads, job)
    live = [a for a in reads.job_allocs(namespace, job_id) if not a.terminal_status()]
    count = sum(1 for a in live if not opts.groups or a.task_group in opts.groups)
    restart = JobRestart(
        id=str(uuid.uuid4()),
        namespace=namespace,
        job_id=job_id,
        batch_size=max(1, math.ceil(count * size / 100)) if percent else size,
        batch_wait=wait,
        groups=list(opts.groups),
        tasks=list(opts.tasks),
        all_tasks=opts.all_tasks,
        reschedule=opts.reschedule,
        on_error=opts.on_error,
        health_check=opts.health_check,
        started_at=now,
        updated_at=now,
    )
    return JobRestartChange(
        [NewEvent(JobRestartStarted(restart=restart), expected_version=version)], [], restart
    )


def _conflicts(reads: ClusterReads, job: Job) -> None:
    if job.stop:
        raise Conflict(f"Job {job.id!r} is stopped: there is nothing to restart")
    dep = reads.active_deployment(job.namespace, job.id)
    if dep is not None:
        raise Conflict(
            f"Job {job.id!r} has an active deployment ({dep.id}): restart it once the deployment ends"
        )
    for r in reads.job_restarts_of(job.namespace, job.id):
        if not r.terminal():
            raise Conflict(f"Job {job.id!r} is being restarted already ({r.id}, {r.status})")


def _job_restart(reads: ClusterReads, namespace: str, job_id: str, restart_id: str) -> JobRestart:
    r = reads.job_restart(restart_id)
    if r is None or (r.namespace, r.job_id) != (namespace, job_id):
        raise NotFound("restart not found")
    return r


def _set(r: JobRestart, status: str, description: str, now: int) -> JobRestartChange:
    event = JobRestartUpdated(restart_id=r.id, namespace=r.namespace, job_id=r.job_id, status=status,
                              status_description=description, at=now)  # fmt: skip
    return JobRestartChange([NewEvent(event)], [], r)


def pause(reads: ClusterReads, namespace: str, job_id: str, restart_id: str, now: int) -> JobRestartChange:
    """Hold the next batch (the batch in flight goes on)."""
    r = _job_restart(reads, namespace, job_id, restart_id)
    if r.status != RESTART_RUNNING:
        raise Invalid(f"can't pause a {r.status} restart: only a running one pauses")
    return _set(r, RESTART_PAUSED, "Paused by an operator", now)


def resume(reads: ClusterReads, namespace: str, job_id: str, restart_id: str, now: int) -> JobRestartChange:
    """Go on with a paused restart."""
    r = _job_restart(reads, namespace, job_id, restart_id)
    if r.status != RESTART_PAUSED:
        raise Invalid(f"can't resume a {r.status} restart: only a paused one resumes")
    return _set(r, RESTART_RUNNING, "", now)


def cancel(reads: ClusterReads, namespace: str, job_id: str, restart_id: str, now: int) -> JobRestartChange:
    """End the restart for good (what it restarted stays restarted)."""
    r = _job_restart(reads, namespace, job_id, restart_id)
    if r.terminal():
        raise Invalid(f"can't cancel a {r.status} restart")
    return _set(r, RESTART_CANCELLED, "Cancelled by an operator", now)
