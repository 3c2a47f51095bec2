"""The job's deployments during one reconciliation: cancelling the ones a newer or stopped job
no longer needs, the per task group state of the current one, how far a rolling update may go,
creating a deployment for a new job version, and its completion."""

from __future__ import annotations

from drover.model import Deployment, DeploymentState, Job, TaskGroup
from drover.model.deployment import (
    DEPLOYMENT_CANCELLED,
    DEPLOYMENT_FAILED,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_PENDING,
    DEPLOYMENT_SUCCESSFUL,
    DESC_NEWER_JOB,
    DESC_RUNNING_NEEDS_PROMOTION,
    DESC_STOPPED_JOB,
    DESC_SUCCESSFUL,
)
from drover.scheduler.plan import DeploymentStatusUpdate
from drover.scheduler.reconciler.allocs import AllocSet
from drover.scheduler.reconciler.inputs import EvalContext, JobState
from drover.scheduler.reconciler.results import ReconcileResults


class Deployments:
    """The current deployment (a copy of the latest, while it still applies to the job), the one
    it replaced, and whether the current one is paused or failed."""

    def __init__(self, latest: Deployment | None) -> None:
        self.current = latest.model_copy(deep=True) if latest is not None else None
        self.old: Deployment | None = None
        self.paused = False
        self.failed = False

    def cancel_unneeded(self, job: Job | None, results: ReconcileResults) -> None:
        """Cancel the latest deployment when the job is stopped or has a newer version, and set
        aside one that is over (successful or cancelled)."""
        d = self.current
        if job is None or job.stopped():
            if d is not None and d.active():
                results.deployment_updates.append(_status(d, DEPLOYMENT_CANCELLED, DESC_STOPPED_JOB))
            self.old, self.current = d, None
        elif d is not None and (d.job_create_index != job.create_index or d.job_version != job.version):
            if d.active():
                results.deployment_updates.append(_status(d, DEPLOYMENT_CANCELLED, DESC_NEWER_JOB))
            self.old, self.current = d, None
        elif d is not None and d.status in (DEPLOYMENT_SUCCESSFUL, DEPLOYMENT_CANCELLED):
            self.old, self.current = d, None
        d = self.current
        self.paused = d is not None and d.status in (DEPLOYMENT_PAUSED, DEPLOYMENT_PENDING)
        self.failed = d is not None and d.status == DEPLOYMENT_FAILED

    def unneeded_canary_ids(self) -> list[str]:
        """Canaries no deployment will promote: those of the replaced deployment and of a
        failed current one, unless their group was promoted."""
        ids: list[str] = []
        for dep in (self.old, self.current if self.failed else None):
            if dep is None:
                continue
            for st in dep.task_groups.values():
                if not st.promoted:
                    ids.extend(st.placed_canaries)
        return ids

    def canary_ids(self) -> list[str]:
        """The canaries the current deployment placed."""
        if self.current is None:
            return []
        return [i for st in self.current.task_groups.values() for i in st.placed_canaries]

    def group_state(self, tg: TaskGroup) -> tuple[DeploymentState, bool]:
        """The current deployment's state of `tg`, or a new one for it (then False)."""
        if self.current is not None and tg.name in self.current.task_groups:
            return self.current.task_groups[tg.name], True
        dstate = DeploymentState()
        if tg.update is not None and tg.update.rolling():
            dstate.auto_revert = tg.update.auto_revert
            dstate.auto_promote = tg.update.auto_promote
            dstate.progress_deadline = tg.update.progress_deadline
        return dstate, False

    def under_provisioned_by(
        self, tg: TaskGroup, untainted: AllocSet, destructive: AllocSet, migrate: AllocSet, is_canarying: bool
    ) -> int:
        """How many allocs the group may replace now: its count without a rolling update;
        otherwise `max_parallel` less the current deployment's allocs not yet healthy (none
        while any is unhealthy, or the deployment is paused, failed or canarying)."""
        if tg.update is None or not tg.update.rolling() or not (destructive or migrate):
            return tg.count
        if self.current is None:
            return tg.update.max_parallel
        if self.paused or self.failed or is_canarying:
            return 0
        under = tg.update.max_parallel
        dep_id = self.current.id
        for a in untainted.values():
            if a.deployment_id != dep_id:
                continue
            ds = a.deployment_status
            if ds is not None and ds.is_unhealthy():
                return 0
            if ds is None or not ds.is_healthy():
                under -= 1
        return max(under, 0)

    def create_for_group(
        self,
        tg: TaskGroup,
        dstate: DeploymentState,
        group: AllocSet,
        updating_spec: bool,
        job: JobState,
        ctx: EvalContext,
        results: ReconcileResults,
    ) -> None:
        """Put `tg` (with a rolling update and allocs to place, and not yet in the current
        deployment) in the current deployment, creating one for the job version unless the
        group already runs that version unchanged."""
        assert job.job is not None
        if tg.update is None or not tg.update.rolling() or dstate.desired_total == 0:
            return
        if not updating_spec and any(a.job_version == job.job.version for a in group.values()):
            return
        if self.current is None:
            self.current = results.deployment = _new_deployment(job, ctx)
        self.current.task_groups[tg.name] = dstate
        if results.deployment is None:
            results.deployment = self.current

    def group_complete(self, tg: TaskGroup) -> bool:
        """Whether the current deployment is done with `tg`: every alloc healthy and any
        canaries promoted."""
        st = self.current.task_groups.get(tg.name) if self.current is not None else None
        return st is None or not (
            st.healthy_allocs < max(st.desired_total, st.desired_canaries)
            or (st.desired_canaries > 0 and not st.promoted)
        )

    def finish(self, complete: bool, results: ReconcileResults) -> None:
        """Say a created deployment awaits promotion; mark the current one successful when every
        group is complete."""
        if results.deployment is not None and results.deployment.requires_promotion():
            results.deployment.status_description = DESC_RUNNING_NEEDS_PROMOTION
        if self.current is not None and complete and self.current.active():
            results.deployment_updates.append(_status(self.current, DEPLOYMENT_SUCCESSFUL, DESC_SUCCESSFUL))


def _status(d: Deployment, status: str, description: str) -> DeploymentStatusUpdate:
    return DeploymentStatusUpdate(deployment_id=d.id, status=status, status_description=description)


def _new_deployment(job: JobState, ctx: EvalContext) -> Deployment:
    assert job.job is not None
    return Deployment(
        id=ctx.new_id(),
        namespace=job.namespace,
        job_id=job.job_id,
        job_version=job.job.version,
        job_modify_index=job.job.modify_index,
        job_spec_modify_index=job.job.job_modify_index,
        job_create_index=job.job.create_index,
        eval_priority=ctx.eval_priority,
        create_time=ctx.now,
        modify_time=ctx.now,
    )
