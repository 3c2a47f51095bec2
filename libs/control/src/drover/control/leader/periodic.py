"""The periodic dispatcher's rules (Nomad's PeriodicDispatch): which launches are due, and what a
launch appends (an operator's force is drover.control.commands.periodic).

A launch of a periodic parent is a child job `<parent>/periodic-<unix seconds of the launch>`
(ParentID set, the periodic block dropped) registered together with its `periodic-job` eval, in
one append that expects the child's job stream to be new. The child's ID is its launch time, so
a launch can only ever be made once: a dispatcher that tries a launch made already (by a leader
deposed meanwhile, or by a force in the same second) is refused by the log.

When is a launch due? The parent's last launch is the latest of: its children's launch times,
its SubmitTime (registering the job again starts its schedule from then, as Nomad's dispatcher
does) and what the dispatcher has passed over itself. The launch due is the last one of the
schedule after that and no later than `now`: after downtime at most one missed launch is made
up for, as Nomad's new leader does. With ProhibitOverlap a launch is passed over while a child
is still running: it has an eval not yet terminal or an alloc not yet terminal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from drover.control.change import Change
from drover.model import Job
from drover.model.evaluation import TRIGGER_PERIODIC_JOB, job_eval
from drover.model.events import JobRegistered, NewEvent
from drover.model.periodic import SECOND, latest_launch, next_launch
from drover.model.state import InMemoryState

LAUNCH_SUFFIX = "/periodic-"
JobKey = tuple[str, str]


def child_id(parent_id: str, at: int) -> str:
    """The ID of the child launched at `at` (ns): `<parent>/periodic-<unix seconds>`."""
    return f"{parent_id}{LAUNCH_SUFFIX}{at // SECOND}"


def launch_time(job: Job) -> int | None:
    """When `job` was launched (ns), if it is a periodic parent's child."""
    if not job.parent_id or not job.id.startswith(job.parent_id + LAUNCH_SUFFIX):
        return None
    digits = job.id[len(job.parent_id) + len(LAUNCH_SUFFIX) :]
    return int(digits) * SECOND if digits.isdigit() else None


def is_active(job: Job) -> bool:
    """Whether the dispatcher launches `job`: periodic, enabled and not stopped."""
    return job.periodic is not None and job.periodic.enabled and not job.stop


def derive_child(parent: Job, at: int, now: int) -> Job:
    """The child launched at `at`: the parent's spec as a new job, without its periodic block."""
    return parent.child(child_id(parent.id, at), now, periodic=None, version=0, stable=False)


@dataclass
class LaunchChange(Change):
    """A launch: the child's registration and its eval, in one append."""

    job: Job | None = None
    at: int = 0


def launch(parent: Job, at: int, now: int) -> LaunchChange:
    """Launch `parent` for its launch time `at`: the child, expected new, and its eval."""
    child = derive_child(parent, at, now)
    eval_ = job_eval(child, TRIGGER_PERIODIC_JOB, now)
    change = Change.of([NewEvent(JobRegistered(job=child), expected_version=0)], [eval_])
    return LaunchChange(change.events, change.evals, child, at)


@dataclass
class DispatchStep:
    """One look at every periodic job: the launches to append (one append each), the launches
    passed over for ProhibitOverlap, and when the next launch of any of them falls due."""

    launches: list[LaunchChange] = field(default_factory=list)
    skipped: dict[JobKey, int] = field(default_factory=dict)
    wake_at: int | None = None
    tracked: list[JobKey] = field(default_factory=list)


def dispatch_step(state: InMemoryState, passed: Mapping[JobKey, int], now: int) -> DispatchStep:
    """The launches due at `now`. `passed`: per job, the latest launch time the dispatcher has
    already dealt with (appended, found made already, or skipped)."""
    out = DispatchStep()
    parents = [j for j in state.jobs.values() if is_active(j)]
    if not parents:
        return out
    children = children_by_parent(state)
    live: set[JobKey] | None = None
    for parent in parents:
        assert parent.periodic is not None
        key = (parent.namespace, parent.id)
        out.tracked.append(key)
        kids = children.get(key, [])
        last = max(parent.submit_time, passed.get(key, 0), *(t for _, t in kids))
        at = latest_launch(parent.periodic, last, now)
        if at is not None:
            if parent.periodic.prohibit_overlap:
                live = live if live is not None else jobs_with_live_evals(state)
                running = any(running_child(state, c, live) for c, _ in kids)
            else:
                running = False
            if running:
                out.skipped[key] = at
            else:
                out.launches.append(launch(parent, at, now))
            last = at
        upcoming = next_launch(parent.periodic, max(last, now))
        if upcoming is not None and (out.wake_at is None or upcoming < out.wake_at):
            out.wake_at = upcoming
    return out


def children_by_parent(state: InMemoryState) -> dict[JobKey, list[tuple[Job, int]]]:
    """Every periodic child in `state` with its launch time, by its parent."""
    out: dict[JobKey, list[tuple[Job, int]]] = {}
    for j in state.jobs.values():
        at = launch_time(j)
        if at is not None:
            out.setdefault((j.namespace, j.parent_id), []).append((j, at))
    return out


def jobs_with_live_evals(state: InMemoryState) -> set[JobKey]:
    return {(e.namespace, e.job_id) for e in state.evals.values() if not e.terminal_status()}


def running_child(state: InMemoryState, child: Job, live_evals: set[JobKey]) -> bool:
    """Nomad's RunningChildren, for one child: an eval of it not terminal, or an alloc."""
    if (child.namespace, child.id) in live_evals:
        return True
    return any(not a.terminal_status() for a in state.allocs_by_job(child.namespace, child.id))
