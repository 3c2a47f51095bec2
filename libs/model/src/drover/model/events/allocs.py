"""An alloc's events outside a plan: its client's reports, the servers' intents on it (migrate,
reschedule), an operator's restart request; and how every event writes an alloc."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from drover.model.alloc import (
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_UNKNOWN,
    CLIENT_TERMINAL,
    Allocation,
    AllocDeploymentStatus,
    AllocRestartRequest,
    DesiredTransition,
    TaskState,
)
from drover.model.base import NomadModel
from drover.model.evaluation import Evaluation
from drover.model.events.base import Event, Reads
from drover.model.events.evals import reads_evals, upsert_evals
from drover.model.events.services import drop_services_of
from drover.model.node import NODE_STATUS_DISCONNECTED

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


def write_alloc(state: StateWriter, index: int, a: Allocation, at: int, old: Allocation | None) -> Allocation:
    """Write `a` as of `index`, keeping from `old` (the alloc it replaces) what the client owns."""
    update: dict[str, object] = {"modify_index": index, "alloc_modify_index": index}
    if at:
        update["modify_time"] = at
    if old is None:
        update["create_index"] = index
    else:
        update["create_index"] = old.create_index
        update["task_states"] = old.task_states
        update["restart_request"] = old.restart_request
        # Plans carry existing allocs without their placement metrics; keep the recorded ones.
        if a.metrics is None and old.metrics is not None:
            update["metrics"] = old.metrics
        # A plan's copy predates a replacement the same plan placed (Nomad's state store
        # carries NextAllocation over too).
        if old.next_allocation and not a.next_allocation:
            update["next_allocation"] = old.next_allocation
        if keeps_client_status(state, old.node_id, a.client_status):
            update["client_status"] = old.client_status
            update["client_description"] = old.client_description
        # The client's health verdict holds within its deployment; an alloc an in-place update
        # moved into a new deployment is judged again.
        kept = old.deployment_status if old.deployment_id == a.deployment_id else None
        if kept is not None and a.deployment_status is not None:
            update["deployment_status"] = kept.model_copy(update={"canary": a.deployment_status.canary})
        elif kept is not None:
            update["deployment_status"] = kept
    if getattr(state, "drop_metrics", False):
        update["metrics"] = None  # the state would drop them anyway: one copy, not two
    if getattr(state, "owns_events", False):
        # The event was decoded for this state alone: its alloc is filled in, not copied.
        a.__dict__.update(update)
        new = a
    else:
        new = a.model_copy(update=update)
    state.upsert_alloc(new)
    if new.client_status == ALLOC_CLIENT_LOST and (old is None or old.client_status != ALLOC_CLIENT_LOST):
        drop_services_of(state, alloc_ids=[new.id])
    return new


def keeps_client_status(state: StateWriter, node_id: str, planned: str) -> bool:
    """Whether an alloc a plan writes over one on `node_id` keeps the client status it had
    rather than the plan's `planned` one. The client owns its status and description; the
    server only sets lost, and unknown while the node is disconnected: a plan computed before
    the node came back (and its client said "running") must not mark the alloc unknown again."""
    if planned == ALLOC_CLIENT_LOST:
        return False
    if planned != ALLOC_CLIENT_UNKNOWN:
        return True
    node = state.node(node_id)
    return node is not None and node.status != NODE_STATUS_DISCONNECTED


class AllocClientUpdate(NomadModel):
    id: str
    client_status: str
    client_description: str = ""
    task_states: dict[str, TaskState] | None = None
    deployment_status: AllocDeploymentStatus | None = None
    at: int = 0


class AllocsClientUpdated(Event):
    """Clients reported alloc status (running, complete, failed, ...), batched."""

    type: Literal["AllocsClientUpdated"] = "AllocsClientUpdated"
    nomad_event_type: ClassVar[str | None] = "AllocationUpdated"
    node_id: str = ""
    updates: list[AllocClientUpdate]

    def stream(self) -> str:
        return f"client:{self.node_id}" if self.node_id else "client"

    def apply_to(self, state: StateWriter, index: int) -> None:
        for u in self.updates:
            old = state.alloc(u.id)
            if old is None:
                continue
            update: dict[str, object] = {
                "client_status": u.client_status,
                "client_description": u.client_description,
                "modify_index": index,
            }
            if u.at:
                update["modify_time"] = u.at
            if u.task_states is not None:
                update["task_states"] = u.task_states
            if u.deployment_status is not None:
                update["deployment_status"] = _health(state, index, old, u.deployment_status)
            state.upsert_alloc(old.model_copy(update=update))
        ended = [u.id for u in self.updates if u.client_status in CLIENT_TERMINAL]
        drop_services_of(state, alloc_ids=ended)

    def reads(self, r: Reads) -> None:
        r.allocs.extend(u.id for u in self.updates)


def _health(
    state: StateWriter, index: int, old: Allocation, reported: AllocDeploymentStatus
) -> AllocDeploymentStatus:
    """The alloc's deployment status as the client reported its health, and the deployment's
    healthy / unhealthy counts and progress deadline moved with it (Nomad's
    updateDeploymentWithAlloc). The canary flag is the server's."""
    prev = old.deployment_status
    new = reported.model_copy(
        update={
            "canary": prev.canary if prev is not None else False,
            "modify_index": prev.modify_index if prev is not None else 0,
        }
    )
    was = prev.healthy if prev is not None else None
    if prev is not None and was is False:
        return prev  # once unhealthy, an alloc stays so for its deployment
    if new.healthy is None or was == new.healthy:
        return new if new.healthy is not None or prev is None else prev
    new.modify_index = index
    dep = state.deployment(old.deployment_id) if old.deployment_id else None
    if dep is None or old.task_group not in dep.task_groups:
        return new
    bumped = dep.model_copy(deep=True)
    st = bumped.task_groups[old.task_group]
    if new.healthy:
        st.healthy_allocs += 1
        if st.progress_deadline and new.timestamp:
            st.require_progress_by = max(st.require_progress_by, new.timestamp + st.progress_deadline)
    else:
        st.unhealthy_allocs += 1
        if was is True:
            st.healthy_allocs -= 1
    bumped.modify_index = index
    state.upsert_deployment(bumped)
    return new


class AllocsTransitioned(Event):
    """Server-side intents set on allocs (the node drainer's migrate), with the evals that act
    on them (Nomad's AllocUpdateDesiredTransition)."""

    type: Literal["AllocsTransitioned"] = "AllocsTransitioned"
    nomad_event_type: ClassVar[str | None] = "AllocationUpdateDesiredStatus"
    transitions: dict[str, DesiredTransition]
    evals: list[Evaluation] = Field(default_factory=list)

    def stream(self) -> str:
        return "transitions"

    def apply_to(self, state: StateWriter, index: int) -> None:
        for alloc_id, t in self.transitions.items():
            old = state.alloc(alloc_id)
            if old is None:
                continue
            merged = old.desired_transition.model_copy(update=t.model_dump(exclude_none=True))
            state.upsert_alloc(old.model_copy(update={"desired_transition": merged, "modify_index": index}))
        upsert_evals(state, index, self.evals)

    def reads(self, r: Reads) -> None:
        r.allocs.extend(self.transitions)
        reads_evals(r, self.evals)

    def evals_made(self) -> list[Evaluation]:
        return self.evals


class AllocRestartRequested(Event):
    """An operator asked for an alloc's tasks to be restarted in place (Nomad's alloc restart);
    the node's agent acts on it and reports the restart in the task events."""

    type: Literal["AllocRestartRequested"] = "AllocRestartRequested"
    nomad_event_type: ClassVar[str | None] = "AllocationUpdated"
    alloc_id: str
    request: AllocRestartRequest

    def stream(self) -> str:
        return f"restart:{self.alloc_id}"

    def apply_to(self, state: StateWriter, index: int) -> None:
        old = state.alloc(self.alloc_id)
        if old is not None:
            state.upsert_alloc(
                old.model_copy(update={"restart_request": self.request, "modify_index": index})
            )

    def reads(self, r: Reads) -> None:
        r.allocs.append(self.alloc_id)
