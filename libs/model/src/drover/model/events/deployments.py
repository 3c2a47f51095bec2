"""A deployment's events: created or replaced whole, and the deployment watcher's or an
operator's changes to it (status, promotion)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from drover.model.deployment import Deployment
from drover.model.evaluation import Evaluation
from drover.model.events.base import Event, Reads
from drover.model.events.evals import reads_evals, upsert_evals

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


def deployment_stream(deployment_id: str) -> str:
    return f"deployment:{deployment_id}"


def write_deployment(state: StateWriter, index: int, dep: Deployment) -> Deployment | None:
    """Write `dep` as of `index` (CreateIndex kept from the one it replaces); the old one."""
    old = state.deployment(dep.id)
    update = {"create_index": old.create_index if old else index, "modify_index": index}
    state.upsert_deployment(dep.model_copy(update=update))
    return old


class DeploymentUpserted(Event):
    type: Literal["DeploymentUpserted"] = "DeploymentUpserted"
    nomad_event_type: ClassVar[str | None] = "DeploymentStatusUpdate"
    deployment: Deployment

    def stream(self) -> str:
        return deployment_stream(self.deployment.id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        write_deployment(state, index, self.deployment)

    def reads(self, r: Reads) -> None:
        r.deployments.append(self.deployment.id)


class DeploymentUpdated(Event):
    """The deployment watcher's changes to a deployment: a new status (failed), or its canaries
    promoted; with the evals that act on it (Nomad's UpdateDeploymentStatus / Promotion)."""

    type: Literal["DeploymentUpdated"] = "DeploymentUpdated"
    nomad_event_type: ClassVar[str | None] = "DeploymentStatusUpdate"
    deployment_id: str
    status: str = ""
    status_description: str = ""
    promote: bool = False
    # The groups whose canaries are promoted; none named: every group with canaries.
    promote_groups: list[str] = Field(default_factory=list)
    evals: list[Evaluation] = Field(default_factory=list)
    at: int = 0

    def stream(self) -> str:
        return deployment_stream(self.deployment_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.deployment(self.deployment_id)
        if old is not None:
            state.upsert_deployment(self._changed(old, index))
        upsert_evals(state, index, self.evals)

    def _changed(self, old: Deployment, index: int) -> Deployment:
        new = old.model_copy(deep=True)
        if self.status:
            new.status = self.status
        if self.status_description:
            new.status_description = self.status_description
        if self.promote:
            for name, st in new.task_groups.items():
                if st.desired_canaries and (not self.promote_groups or name in self.promote_groups):
                    st.promoted = True
                    # The rest of the group gets a fresh progress deadline (Nomad does so).
                    if st.progress_deadline and st.require_progress_by and self.at:
                        st.require_progress_by = self.at + st.progress_deadline
        new.modify_index = index
        if self.at:
            new.modify_time = self.at
        return new

    def reads(self, r: Reads) -> None:
        r.deployments.append(self.deployment_id)
        reads_evals(r, self.evals)

    def evals_made(self) -> list[Evaluation]:
        return self.evals
