"""What the reconciler decides: allocs to place, stop or update, deployment changes, follow-up
evals, and the per task group counts (Nomad's reconcileResults)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from drover.model import Allocation, Deployment, Evaluation, TaskGroup
from drover.scheduler.plan import DeploymentStatusUpdate, DesiredUpdates

# Descriptions the scheduler writes on allocs it stops (Nomad's wording).
ALLOC_NOT_NEEDED = "alloc not needed due to job update"
ALLOC_RECONNECTED = "alloc not needed due to disconnected client reconnect"
ALLOC_MIGRATING = "alloc is being migrated"
ALLOC_UPDATING = "alloc is being updated due to job update"
ALLOC_LOST = "alloc is lost since its node is down"
ALLOC_UNKNOWN = "alloc is unknown since its node is disconnected"
ALLOC_IN_PLACE = "alloc updating in-place"
ALLOC_RESCHEDULED = "alloc was rescheduled because it failed"
RESCHEDULING_FOLLOWUP_DESC = "created for delayed rescheduling"
DISCONNECT_TIMEOUT_FOLLOWUP_DESC = "created for delayed disconnect timeout"


@dataclass
class PlaceRequest:
    """An alloc to place (Nomad's allocPlaceResult)."""

    name: str
    task_group: TaskGroup
    previous: Allocation | None = None
    reschedule: bool = False
    canary: bool = False
    lost: bool = False
    downgrade_non_canary: bool = False
    # Non-empty: stop `previous` with this description when (and only if) this alloc is placed.
    stop_previous: str = ""


@dataclass
class StopRequest:
    """An alloc to stop, with the description (and client status) to record on it."""

    alloc: Allocation
    description: str
    client_status: str = ""
    followup_eval_id: str = ""


@dataclass
class DestructiveRequest:
    """An alloc to replace by a new one of the same name (Nomad's allocDestructiveResult)."""

    name: str
    task_group: TaskGroup
    stop: Allocation
    description: str = ALLOC_UPDATING


@dataclass
class ReconcileResults:
    """Everything one reconciliation asks of the scheduler."""

    # A deployment created by this reconciliation (None: none created).
    deployment: Deployment | None = None
    deployment_updates: list[DeploymentStatusUpdate] = field(default_factory=list)
    place: list[PlaceRequest] = field(default_factory=list)
    destructive: list[DestructiveRequest] = field(default_factory=list)
    inplace: list[Allocation] = field(default_factory=list)
    stop: list[StopRequest] = field(default_factory=list)
    attribute_updates: dict[str, Allocation] = field(default_factory=dict)
    disconnect_updates: dict[str, Allocation] = field(default_factory=dict)
    reconnect_updates: dict[str, Allocation] = field(default_factory=dict)
    desired_tg_updates: dict[str, DesiredUpdates] = field(default_factory=dict)
    followup_evals: list[Evaluation] = field(default_factory=list)

    def desired(self, tg_name: str) -> DesiredUpdates:
        """The counts of task group `tg_name`, created on first use."""
        return self.desired_tg_updates.setdefault(tg_name, DesiredUpdates())

    def stop_all(self, allocs: Iterable[Allocation], description: str, client_status: str = "") -> None:
        for a in allocs:
            self.stop.append(StopRequest(alloc=a, description=description, client_status=client_status))
