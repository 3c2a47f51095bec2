"""The reconciler for service and batch jobs: per task group, what to place, stop and update.

`cluster` holds the reconciler itself; `allocs` the alloc buckets and their filters;
`deployments`, `disconnect` and `followups` the deployment, disconnected-client and follow-up
eval rules; `inputs` and `results` what it is given and what it returns.
"""

from drover.scheduler.reconciler.cluster import Reconciler
from drover.scheduler.reconciler.inputs import (
    ClusterState,
    EvalContext,
    IdFn,
    JobLookup,
    JobState,
    UpdateFn,
    new_uuid_fn,
)
from drover.scheduler.reconciler.results import (
    ALLOC_IN_PLACE,
    ALLOC_LOST,
    ALLOC_MIGRATING,
    ALLOC_NOT_NEEDED,
    ALLOC_RECONNECTED,
    ALLOC_RESCHEDULED,
    ALLOC_UNKNOWN,
    ALLOC_UPDATING,
    DISCONNECT_TIMEOUT_FOLLOWUP_DESC,
    RESCHEDULING_FOLLOWUP_DESC,
    DestructiveRequest,
    PlaceRequest,
    ReconcileResults,
    StopRequest,
)

__all__ = [
    "ALLOC_IN_PLACE",
    "ALLOC_LOST",
    "ALLOC_MIGRATING",
    "ALLOC_NOT_NEEDED",
    "ALLOC_RECONNECTED",
    "ALLOC_RESCHEDULED",
    "ALLOC_UNKNOWN",
    "ALLOC_UPDATING",
    "DISCONNECT_TIMEOUT_FOLLOWUP_DESC",
    "RESCHEDULING_FOLLOWUP_DESC",
    "ClusterState",
    "DestructiveRequest",
    "EvalContext",
    "IdFn",
    "JobLookup",
    "JobState",
    "PlaceRequest",
    "ReconcileResults",
    "Reconciler",
    "StopRequest",
    "UpdateFn",
    "new_uuid_fn",
]
