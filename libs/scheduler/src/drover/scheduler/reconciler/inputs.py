"""What the reconciler is given, grouped as Nomad groups its reconciler's inputs: the job and its
deployment, the cluster's state, and the eval being processed."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from drover.model import Allocation, Deployment, Job, Node, ReschedulePolicy, TaskGroup
from drover.model.defaults import default_reschedule_policy

# Decides whether an existing alloc needs nothing, a destructive update, or an in-place update
# (then returns the updated alloc). Supplied by the scheduler, which can check node fit.
UpdateFn = Callable[[Allocation, Job, TaskGroup], tuple[bool, bool, Allocation | None]]
# The job version an alloc was placed with (None when the state no longer has it).
JobLookup = Callable[[Allocation], Job | None]
IdFn = Callable[[], str]


@dataclass(frozen=True, slots=True)
class JobState:
    """The job being reconciled and its latest deployment."""

    job_id: str
    namespace: str
    # None: the job is gone (purged); every alloc of it stops.
    job: Job | None
    # Batch semantics: allocs that finished successfully are done, not replaced.
    batch: bool
    deployment: Deployment | None
    job_lookup: JobLookup

    def group_of(self, alloc: Allocation) -> TaskGroup | None:
        """The task group of `alloc` in the job version it was placed with."""
        j = self.job_lookup(alloc) or self.job
        return j.lookup_task_group(alloc.task_group) if j is not None else None

    def reschedule_policy_of(self, alloc: Allocation) -> ReschedulePolicy | None:
        """The reschedule policy `alloc` was placed with (None for system jobs)."""
        j = self.job_lookup(alloc) or self.job
        if j is None or j.is_system():
            return None
        tg = j.lookup_task_group(alloc.task_group)
        if tg is None:
            return None
        return tg.reschedule_policy if tg.reschedule_policy is not None else default_reschedule_policy(j.type)

    def lost_after(self, alloc: Allocation) -> int:
        """How long `alloc` may be unknown on a disconnected node before it is lost (0: never
        unknown, lost at once)."""
        tg = self.group_of(alloc)
        return tg.lost_after() if tg is not None else 0


@dataclass(frozen=True, slots=True)
class ClusterState:
    """The job's allocs and the nodes they are on."""

    allocs: Sequence[Allocation]
    # Nodes of the job's allocs that are down, disconnected, draining or gone (None).
    tainted_nodes: Mapping[str, Node | None]
    supports_disconnected_clients: bool = True
    # Placement scores by alloc ID, for allocs whose metrics the state does not hold (a
    # best_score reconnect compares them; drover.scheduler.reconciler.reconnecting).
    placement_scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EvalContext:
    """The eval being processed: follow-up evals and deployments take its ID and priority, the
    time it runs at, and IDs from its seeded generator."""

    eval_id: str
    eval_priority: int
    now: int
    new_id: IdFn


# uuid.UUID(int=n, version=4) clears these bits and sets the version and RFC 4122 variant.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (4 << 76) | (0x8000 << 48)


def new_uuid_fn(seed: int) -> IdFn:
    """A deterministic UUID generator seeded from the eval. It gives exactly what
    `str(uuid.UUID(int=rng.getrandbits(128), version=4))` gives, formatted directly: a plan
    of 1,000 placements draws 1,000 IDs, and building UUID objects was a tenth of its time."""
    bits = random.Random(seed).getrandbits

    def gen() -> str:
        h = f"{(bits(128) & _UUID4_CLEAR) | _UUID4_SET:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    return gen
