"""Deployments: the progress of a job version rolling out (update block)."""

from __future__ import annotations

from pydantic import Field

from drover.model.base import NomadModel

DEPLOYMENT_RUNNING = "running"
DEPLOYMENT_PAUSED = "paused"
DEPLOYMENT_FAILED = "failed"
DEPLOYMENT_SUCCESSFUL = "successful"
DEPLOYMENT_CANCELLED = "cancelled"
DEPLOYMENT_PENDING = "pending"
DEPLOYMENT_BLOCKED = "blocked"
DEPLOYMENT_UNBLOCKING = "unblocking"
DEPLOYMENT_INITIALIZING = "initializing"

ACTIVE_DEPLOYMENT_STATUSES = (
    DEPLOYMENT_RUNNING,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_PENDING,
    DEPLOYMENT_BLOCKED,
    DEPLOYMENT_UNBLOCKING,
    DEPLOYMENT_INITIALIZING,
)

DESC_RUNNING = "Deployment is running"
DESC_RUNNING_NEEDS_PROMOTION = "Deployment is running but requires manual promotion"
DESC_NEWER_JOB = "Cancelled due to newer version of job"
DESC_STOPPED_JOB = "Cancelled because job is stopped"
DESC_SUCCESSFUL = "Deployment completed successfully"


class DeploymentState(NomadModel):
    """Per task group progress of a deployment."""

    auto_revert: bool = False
    auto_promote: bool = False
    progress_deadline: int = 0
    require_progress_by: int = 0
    promoted: bool = False
    placed_canaries: list[str] = Field(default_factory=list)
    desired_canaries: int = 0
    desired_total: int = 0
    placed_allocs: int = 0
    healthy_allocs: int = 0
    unhealthy_allocs: int = 0


class Deployment(NomadModel):
    id: str = ""
    namespace: str = "default"
    job_id: str = ""
    job_version: int = 0
    job_modify_index: int = 0
    job_spec_modify_index: int = 0
    job_create_index: int = 0
    task_groups: dict[str, DeploymentState] = Field(default_factory=dict)
    status: str = DEPLOYMENT_RUNNING
    status_description: str = DESC_RUNNING
    eval_priority: int = 50
    create_index: int = 0
    modify_index: int = 0
    create_time: int = 0
    modify_time: int = 0

    def active(self) -> bool:
        return self.status in ACTIVE_DEPLOYMENT_STATUSES

    def requires_promotion(self) -> bool:
        return any(s.desired_canaries > 0 and not s.promoted for s in self.task_groups.values())
