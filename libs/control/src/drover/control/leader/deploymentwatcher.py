"""The deployment watcher's decisions (Nomad's deploymentwatcher): given a deployment, its allocs
and its job, what to do now - nothing, an eval so the rollout moves on (an alloc turned healthy),
replacements allowed for unhealthy allocs (progress-based groups), promotion of healthy canaries
(auto_promote), or failing the deployment (an unhealthy alloc with no progress deadline or no
reschedule left, or the progress deadline passed).

Pure: times are Unix ns handed in; the leader service turns the result into events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model.alloc import Allocation
from drover.model.defaults import default_reschedule_policy
from drover.model.deployment import DEPLOYMENT_PAUSED, Deployment
from drover.model.job import Job, ReschedulePolicy, job_spec
from drover.scheduler.reschedule import attempts_in_interval

DESC_FAILED_ALLOCS = "Failed due to unhealthy allocations"
DESC_PROGRESS_DEADLINE = "Failed due to progress deadline"
DESC_FAILED_BY_USER = "Deployment marked as failed"
DESC_PAUSED = "Deployment is paused"
NO_ROLLBACK_TARGET = " - no stable job version to auto revert to"


@dataclass
class WatchResult:
    """What the watcher should do for one deployment."""

    create_eval: bool = False
    allow_replacements: list[str] = field(default_factory=list)
    promote: bool = False
    fail: bool = False
    rollback: bool = False
    description: str = ""
    # The next progress deadline to wake for (0: none).
    deadline: int = 0

    def acts(self) -> bool:
        return self.create_eval or bool(self.allow_replacements) or self.promote or self.fail


def reschedule_eligible(alloc: Allocation, policy: ReschedulePolicy | None, fail_time: int) -> bool:
    """Whether `alloc` may still be rescheduled under `policy` (Nomad's RescheduleEligible)."""
    if policy is None or not (policy.attempts > 0 or policy.unlimited):
        return False
    if policy.unlimited:
        return True
    tracker = alloc.reschedule_tracker
    if tracker is None or not tracker.events:
        return True
    return attempts_in_interval(tracker, policy, fail_time) < policy.attempts


def done_groups(d: Deployment, allocs: list[Allocation]) -> dict[str, bool]:
    """Per group: promoted (if canarying) and enough healthy, live allocs."""
    healthy: dict[str, int] = {}
    for a in allocs:
        ds = a.deployment_status
        if a.deployment_id == d.id and not a.terminal_status() and ds is not None and ds.is_healthy():
            healthy[a.task_group] = healthy.get(a.task_group, 0) + 1
    return {
        name: not (st.desired_canaries and not st.promoted) and healthy.get(name, 0) >= st.desired_total
        for name, st in d.task_groups.items()
    }


def progress_cutoff(d: Deployment, allocs: list[Allocation]) -> int:
    """The earliest RequireProgressBy among groups not yet done (0: none)."""
    done = done_groups(d, allocs)
    cutoffs = [
        st.require_progress_by
        for name, st in d.task_groups.items()
        if not done.get(name) and st.require_progress_by
    ]
    return min(cutoffs, default=0)


def _deadline_fails(d: Deployment, job: Job | None) -> tuple[bool, bool]:
    """At the deadline: (fail, roll back) - a group short of healthy allocs fails it."""
    fail = rollback = False
    for name, st in d.task_groups.items():
        wanted = st.desired_canaries if st.desired_canaries and not st.promoted else st.desired_total
        if st.healthy_allocs >= wanted:
            continue
        fail = True
        tg = job.lookup_task_group(name) if job is not None else None
        if tg is not None and tg.update is not None and tg.update.auto_revert:
            rollback = True
    return fail, rollback


def _can_auto_promote(d: Deployment, allocs: list[Allocation]) -> bool:
    """Every canarying group auto-promotes and all its canaries are placed and healthy."""
    if not d.requires_promotion():
        return False
    by_id = {a.id: a for a in allocs}
    for st in d.task_groups.values():
        if not st.desired_canaries or st.promoted:
            continue
        if not st.auto_promote or len(st.placed_canaries) < st.desired_canaries:
            return False
        for cid in st.placed_canaries:
            a = by_id.get(cid)
            if a is None or a.deployment_status is None or not a.deployment_status.is_healthy():
                return False
    return True


def watch_deployment(
    d: Deployment, allocs: list[Allocation], job: Job | None, now: int, last_eval_index: int
) -> WatchResult:
    """Decide for an active deployment. `allocs` are the job's allocs; `last_eval_index` is the
    create index of the job's newest eval (a healthy alloc newer than it needs a new eval)."""
    res = WatchResult()
    if not d.active() or d.status == DEPLOYMENT_PAUSED:
        return res
    for a in allocs:
        st = d.task_groups.get(a.task_group)
        ds = a.deployment_status
        if a.deployment_id != d.id or st is None or ds is None:
            continue
        if ds.is_unhealthy():
            fail_early = st.progress_deadline == 0
            if not fail_early:
                tg = job.lookup_task_group(a.task_group) if job is not None else None
                policy = None
                if tg is not None:
                    policy = tg.reschedule_policy
                    if policy is None and job is not None:
                        policy = default_reschedule_policy(job.type)
                fail_early = not reschedule_eligible(a, policy, now)
            if fail_early:
                res.fail = True
                res.description = DESC_FAILED_ALLOCS
                if st.auto_revert:
                    res.rollback = True
            elif not a.desired_transition.should_reschedule():
                res.allow_replacements.append(a.id)
        elif ds.is_healthy() and ds.modify_index > last_eval_index:
            res.create_eval = True
    if res.fail:
        res.allow_replacements = []
        return res
    cutoff = progress_cutoff(d, allocs)
    if cutoff and now >= cutoff:
        fail, rollback = _deadline_fails(d, job)
        if fail:
            return WatchResult(fail=True, rollback=rollback, description=DESC_PROGRESS_DEADLINE)
    res.deadline = cutoff
    res.promote = _can_auto_promote(d, allocs)
    return res


def rollback(job: Job, versions: list[Job], desc: str, now: int) -> tuple[str, Job | None]:
    """auto_revert: the latest stable version before `job`'s, to register again as a new version
    (Nomad's rollback), and the failure's description saying so - or why there is none."""
    stable = [v for v in versions if v.stable and v.version < job.version]
    if not stable:
        return desc + NO_ROLLBACK_TARGET, None
    target = max(stable, key=lambda v: v.version)
    if job_spec(target) == job_spec(job):
        return (
            f"{desc} - not rolling back to stable job version {target.version} as current job has "
            "same specification",
            None,
        )
    revert = target.model_copy(
        update={"version": job.version + 1, "stable": False, "stop": False, "submit_time": now}
    )
    return f"{desc} - rolling back to job version {target.version}", revert


def wants_rollback(d: Deployment) -> bool:
    """Whether any group of the deployment asked for auto_revert."""
    return any(st.auto_revert for st in d.task_groups.values())


def promotion_problems(
    d: Deployment, allocs: list[Allocation], groups: list[str], all_groups: bool
) -> list[str]:
    """Why the canaries of `groups` (or all) cannot be promoted now, as Nomad says it; [] if
    they can."""
    if not d.active():
        return [f"Deployment {d.id!r} has terminal status {d.status!r}"]
    unknown = [g for g in groups if g not in d.task_groups]
    if unknown:
        return [f"Deployment {d.id!r} has no task group {g!r}" for g in unknown]
    chosen = [g for g in d.task_groups if all_groups or g in groups]
    canarying = [g for g in chosen if d.task_groups[g].desired_canaries]
    if not canarying:
        return ["Deployment has no canaries to promote"]
    healthy: dict[str, int] = {}
    by_id = {a.id: a for a in allocs}
    for g in canarying:
        for cid in d.task_groups[g].placed_canaries:
            a = by_id.get(cid)
            ds = a.deployment_status if a is not None else None
            if a is not None and not a.terminal_status() and ds is not None and ds.is_healthy():
                healthy[g] = healthy.get(g, 0) + 1
    return [
        f"Task group {g!r} has {healthy.get(g, 0)}/{d.task_groups[g].desired_canaries} healthy allocations"
        for g in canarying
        if healthy.get(g, 0) < d.task_groups[g].desired_canaries
    ]
