"""One task group's allocs as the reconciler (drover.scheduler.reconciler.cluster) sorts them,
bucket by bucket, with what it decides for them on the way."""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model import Allocation, DeploymentState, TaskGroup
from drover.scheduler.plan import DesiredUpdates
from drover.scheduler.reconciler.allocs import AllocSet


@dataclass(slots=True)
class GroupState:
    """One task group's allocs as the reconciler sorts them, step by step."""

    tg: TaskGroup
    desired: DesiredUpdates
    # The current deployment's state of the group (a new one when `existing_deployment` is False).
    dstate: DeploymentState
    existing_deployment: bool
    # The group's allocs, less old batch history and canaries no deployment will promote.
    allocs: AllocSet
    # The current deployment's canaries on healthy nodes.
    canaries: AllocSet
    untainted: AllocSet
    migrate: AllocSet
    lost: AllocSet
    reschedule_now: AllocSet
    reschedule_later: list[tuple[Allocation, int]]
    # Follow-up eval of each alloc marked unknown, or lost while its client is still to stop
    # it (`stop_on_client_after`), by this reconciliation.
    followups: dict[str, str] = field(default_factory=dict)
    # Lost allocs whose client is still to stop them, with when it will have: until then the
    # group places nothing.
    lost_later: list[tuple[Allocation, int]] = field(default_factory=list)

    def canarying(self) -> bool:
        return self.dstate.desired_canaries != 0 and not self.dstate.promoted
