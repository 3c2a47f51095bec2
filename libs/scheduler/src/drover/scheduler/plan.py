"""What a scheduler run produces: the plan for the applier, and the evals it creates or updates."""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model import Allocation, Deployment, Evaluation, Job
from drover.model.base import NomadModel


class DesiredUpdates(NomadModel):
    """Per task group counts of what the scheduler decided (Nomad's DesiredTGUpdates)."""

    ignore: int = 0
    place: int = 0
    migrate: int = 0
    stop: int = 0
    in_place_update: int = 0
    destructive_update: int = 0
    canary: int = 0
    preemptions: int = 0
    reschedule_now: int = 0
    reschedule_later: int = 0
    disconnect: int = 0
    reconnect: int = 0


class DeploymentStatusUpdate(NomadModel):
    deployment_id: str = ""
    status: str = ""
    status_description: str = ""


@dataclass
class Plan:
    """Allocs to place or update per node, allocs to stop per node, deployment changes.

    `node_allocation` holds new allocs and in-place / attribute updates of existing ones;
    `node_update` holds stops (copies of the allocs with DesiredStatus stop/evict set)."""

    eval_id: str
    priority: int
    job: Job | None
    snapshot_index: int = 0
    all_at_once: bool = False
    node_allocation: dict[str, list[Allocation]] = field(default_factory=dict)
    node_update: dict[str, list[Allocation]] = field(default_factory=dict)
    node_preemptions: dict[str, list[Allocation]] = field(default_factory=dict)
    deployment: Deployment | None = None
    deployment_updates: list[DeploymentStatusUpdate] = field(default_factory=list)
    annotations: dict[str, DesiredUpdates] = field(default_factory=dict)

    def append_alloc(self, alloc: Allocation) -> None:
        self.node_allocation.setdefault(alloc.node_id, []).append(alloc)

    def append_stop(self, alloc: Allocation) -> None:
        self.node_update.setdefault(alloc.node_id, []).append(alloc)

    def append_preemption(self, alloc: Allocation) -> None:
        self.node_preemptions.setdefault(alloc.node_id, []).append(alloc)

    def is_noop(self) -> bool:
        return (
            not self.node_allocation
            and not self.node_update
            and not self.node_preemptions
            and self.deployment is None
            and not self.deployment_updates
        )

    def placements(self) -> list[Allocation]:
        return [a for allocs in self.node_allocation.values() for a in allocs]

    def stops(self) -> list[Allocation]:
        return [a for allocs in self.node_update.values() for a in allocs]


@dataclass
class PlanResult:
    """What the applier committed: possibly only part of the plan (rejected nodes dropped)."""

    eval_id: str = ""
    job_id: str = ""
    namespace: str = "default"
    node_allocation: dict[str, list[Allocation]] = field(default_factory=dict)
    node_update: dict[str, list[Allocation]] = field(default_factory=dict)
    node_preemptions: dict[str, list[Allocation]] = field(default_factory=dict)
    deployment: Deployment | None = None
    deployment_updates: list[DeploymentStatusUpdate] = field(default_factory=list)
    rejected_nodes: list[str] = field(default_factory=list)
    refresh_index: int = 0
    alloc_index: int = 0
    # Refused whole: another plan of the job committed after this plan's snapshot.
    stale: bool = False

    def full_commit(self, plan: Plan) -> tuple[bool, int, int]:
        """(all committed?, placements expected, placements committed)."""
        expected = sum(len(v) for v in plan.node_allocation.values())
        actual = sum(len(v) for v in self.node_allocation.values())
        return expected == actual and not self.rejected_nodes, expected, actual


@dataclass
class SchedulerResult:
    """One scheduler pass: the plan to submit, the eval as it should be updated once the plan is
    committed, and the evals to create (follow-ups for delayed reschedules, a blocked eval)."""

    plan: Plan
    eval: Evaluation
    create_evals: list[Evaluation] = field(default_factory=list)
    blocked_eval: Evaluation | None = None
    # A blocked eval that still could not place everything goes back to the blocked set
    # (`eval` then keeps status blocked, with fresh class eligibility) instead of completing.
    reblock: bool = False
