"""Allocations: one task group of one job placed on one node."""

from __future__ import annotations

import sys
from typing import Any

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from drover.model.allocated import AllocatedResources
from drover.model.base import NomadModel, unvalidated
from drover.model.job import Resources
from drover.model.timefmt import RFC3339Ns

ALLOC_DESIRED_RUN = "run"
ALLOC_DESIRED_STOP = "stop"
ALLOC_DESIRED_EVICT = "evict"

ALLOC_CLIENT_PENDING = "pending"
ALLOC_CLIENT_RUNNING = "running"
ALLOC_CLIENT_COMPLETE = "complete"
ALLOC_CLIENT_FAILED = "failed"
ALLOC_CLIENT_LOST = "lost"
ALLOC_CLIENT_UNKNOWN = "unknown"
# An alloc is terminal when the server wants it stopped or its client has finished with it.
DESIRED_TERMINAL = (ALLOC_DESIRED_STOP, ALLOC_DESIRED_EVICT)
CLIENT_TERMINAL = (ALLOC_CLIENT_COMPLETE, ALLOC_CLIENT_FAILED, ALLOC_CLIENT_LOST)

TASK_STATE_PENDING = "pending"
TASK_STATE_RUNNING = "running"
TASK_STATE_DEAD = "dead"


ALLOC_STATE_FIELD_CLIENT_STATUS = "ClientStatus"


class AllocState(NomadModel):
    """One recorded transition of an alloc field (Nomad keeps these for disconnect handling)."""

    field: str = ""
    value: str = ""
    time: int = 0


class TaskEvent(NomadModel):
    type: str = ""
    time: int = 0
    message: str = ""
    display_message: str = ""
    details: dict[str, str] = Field(default_factory=dict)


class TaskState(NomadModel):
    state: str = TASK_STATE_PENDING
    failed: bool = False
    restarts: int = 0
    last_restart: RFC3339Ns = 0
    started_at: RFC3339Ns = 0
    finished_at: RFC3339Ns = 0
    events: list[TaskEvent] = Field(default_factory=list)


class RescheduleEvent(NomadModel):
    reschedule_time: int = 0
    prev_alloc_id: str = ""
    prev_node_id: str = ""
    delay: int = 0


class RescheduleTracker(NomadModel):
    events: list[RescheduleEvent] = Field(default_factory=list)


class DesiredTransition(NomadModel):
    """Server-side intents the scheduler acts on (drain migration, forced reschedule)."""

    migrate: bool | None = None
    reschedule: bool | None = None
    force_reschedule: bool | None = None
    no_shutdown_delay: bool | None = None

    def should_migrate(self) -> bool:
        return bool(self.migrate)

    def should_reschedule(self) -> bool:
        return bool(self.reschedule)

    def should_force_reschedule(self) -> bool:
        return bool(self.force_reschedule)


class AllocDeploymentStatus(NomadModel):
    healthy: bool | None = None
    timestamp: RFC3339Ns = 0
    canary: bool = False
    modify_index: int = 0

    def is_healthy(self) -> bool:
        return self.healthy is True

    def is_unhealthy(self) -> bool:
        return self.healthy is False


class AllocRestartRequest(NomadModel):
    """Drover's record of an operator's restart request on an alloc (Nomad sends it to the client
    directly and keeps nothing): the agent restarts the named task, or the running ones, or all
    with AllTasks, once per ID."""

    id: str = ""
    task_name: str = ""
    # Several tasks by name (a job restart's Tasks); task_name names one.
    task_names: list[str] = Field(default_factory=list)
    all_tasks: bool = False
    time: RFC3339Ns = 0


class NodeScoreMeta(NomadModel):
    node_id: str = ""
    scores: dict[str, float] = Field(default_factory=dict)
    norm_score: float = 0.0


class AllocMetric(NomadModel):
    """Why placements went where they did, or failed (Nomad's AllocMetric)."""

    nodes_evaluated: int = 0
    nodes_filtered: int = 0
    nodes_in_pool: int = 0
    nodes_available: dict[str, int] = Field(default_factory=dict)
    class_filtered: dict[str, int] = Field(default_factory=dict)
    constraint_filtered: dict[str, int] = Field(default_factory=dict)
    nodes_exhausted: int = 0
    class_exhausted: dict[str, int] = Field(default_factory=dict)
    dimension_exhausted: dict[str, int] = Field(default_factory=dict)
    quota_exhausted: list[str] = Field(default_factory=list)
    score_meta_data: list[NodeScoreMeta] = Field(default_factory=list)
    allocation_time: int = 0
    coalesced_failures: int = 0


class Allocation(NomadModel):
    id: str = ""
    namespace: str = "default"
    eval_id: str = ""
    name: str = ""
    node_id: str = ""
    node_name: str = ""
    job_id: str = ""
    job_version: int = 0
    task_group: str = ""
    resources: Resources = Field(default_factory=Resources)
    allocated_resources: AllocatedResources | None = None
    desired_status: str = ALLOC_DESIRED_RUN
    desired_description: str = ""
    desired_transition: DesiredTransition = Field(default_factory=DesiredTransition)
    client_status: str = ALLOC_CLIENT_PENDING
    client_description: str = ""
    task_states: dict[str, TaskState] = Field(default_factory=dict)
    deployment_id: str = ""
    deployment_status: AllocDeploymentStatus | None = None
    restart_request: AllocRestartRequest | None = None
    reschedule_tracker: RescheduleTracker | None = None
    followup_eval_id: str = ""
    previous_allocation: str = ""
    next_allocation: str = ""
    preempted_allocations: list[str] = Field(default_factory=list)
    preempted_by_allocation: str = ""
    alloc_states: list[AllocState] = Field(default_factory=list)
    metrics: AllocMetric | None = None
    create_index: int = 0
    modify_index: int = 0
    alloc_modify_index: int = 0
    create_time: int = 0
    modify_time: int = 0

    # --- status helpers, with Nomad's meaning ---
    def terminal_status(self) -> bool:
        """Desired stop/evict, or the client finished with it (complete, failed, lost)."""
        return self.desired_status in DESIRED_TERMINAL or self.client_status in CLIENT_TERMINAL

    def client_terminal(self) -> bool:
        return self.client_status in CLIENT_TERMINAL

    def server_terminal(self) -> bool:
        return self.desired_status in DESIRED_TERMINAL

    def ran_successfully(self) -> bool:
        """Every task finished without failing (a batch alloc that need not run again)."""
        if not self.task_states:
            return self.client_status == ALLOC_CLIENT_COMPLETE
        return all(ts.state == TASK_STATE_DEAD and not ts.failed for ts in self.task_states.values())

    def last_event_time(self) -> int:
        """When the alloc last changed on the client: the latest task finish, else ModifyTime."""
        last = 0
        for ts in self.task_states.values():
            last = max(last, ts.finished_at)
        return last or self.modify_time

    def last_unknown(self) -> int:
        """When the alloc last became unknown (its node disconnected), 0 if it never did."""
        for st in reversed(self.alloc_states):
            if st.field == ALLOC_STATE_FIELD_CLIENT_STATUS and st.value == ALLOC_CLIENT_UNKNOWN:
                return st.time
        return 0

    def needs_to_reconnect(self) -> bool:
        """The latest client-status transition recorded is to unknown: it was disconnected and
        has not been reconciled since."""
        for st in reversed(self.alloc_states):
            if st.field == ALLOC_STATE_FIELD_CLIENT_STATUS:
                return st.value == ALLOC_CLIENT_UNKNOWN
        return False

    def is_canary(self) -> bool:
        return self.deployment_status is not None and self.deployment_status.canary

    def index(self) -> int:
        """The index in the alloc name ``job.group[index]``."""
        lb = self.name.rfind("[")
        if lb < 0 or not self.name.endswith("]"):
            return -1
        try:
            return int(self.name[lb + 1 : -1])
        except ValueError:
            return -1


class ReplicaAllocation(Allocation):
    """An alloc as the services' replicas hold it: without its placement metrics. Only the API
    shows those (from the projections), and they are most of an alloc's size and decode time;
    under another alias, the stored ``Metrics`` member is skipped unread.

    A replica keeps its allocs' members lean (`lean_members`): the four it least often holds
    other than at their default (`HELD_BY_CLASS`) are then not members of the instance at all;
    the class holds their default, and the serializer and equality put it back."""

    metrics: AllocMetric | None = Field(default=None, alias="ReplicaMetrics", exclude=True)
    # Most allocs have no desired transition: they share one (replicas share equal ones anyway,
    # see InMemoryState._compact), which spares a model built per decoded alloc.
    desired_transition: DesiredTransition = Field(default_factory=lambda: _NO_TRANSITION)

    @model_serializer(mode="wrap")
    def _with_held_defaults(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        out = handler(self)
        members = self.__dict__
        if len(members) == len(_FIELD_NAMES) or info.exclude_defaults or info.exclude_unset:
            return out
        for name, key, default in _HELD_SERIALIZED:
            if name in members or (default is None and info.exclude_none):
                continue
            if (info.include is not None and name not in info.include) or (
                info.exclude is not None and name in info.exclude
            ):
                continue
            out[key if info.by_alias else name] = default
        # In the fields' order, as every other alloc is written.
        order = _ALIASES if info.by_alias else _FIELD_NAMES
        return {k: out[k] for k in order if k in out}

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, ReplicaAllocation) and self.__dict__.keys() != other.__dict__.keys():
            return _with_held(self) == _with_held(other)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


_NO_TRANSITION: DesiredTransition = DesiredTransition()

# --- a replica's allocs, lean ---
# CPython keeps the member names of a class's instances in one table shared by their dicts (a
# "split" dict, PEP 412): each then holds only its values, about 300 bytes where a dict of an
# alloc's 33 members of its own takes 832 (the most of what a replica holds per alloc:
# docs/experiments/replicas.md). The shared table holds at most 29 names, and only those the
# class's first instance is given: so the class's first instance, made here, is given every
# member but the four held by the class (a member never held by an instance until it does not
# hold its default), and `lean_members` copies its dict.
HELD_BY_CLASS: dict[str, Any] = {
    "metrics": None,  # replicas drop them (InMemoryState.drop_metrics), never serialized
    "restart_request": None,
    "reschedule_tracker": None,
    "preempted_by_allocation": "",
}
_FIELD_NAMES = tuple(ReplicaAllocation.model_fields)
_ALIASES = tuple(info.alias or name for name, info in ReplicaAllocation.model_fields.items())
_HELD_SERIALIZED = tuple(
    (name, ReplicaAllocation.model_fields[name].alias or name, default)
    for name, default in HELD_BY_CLASS.items()
    if not ReplicaAllocation.model_fields[name].exclude
)
for _name, _default in HELD_BY_CLASS.items():
    type.__setattr__(ReplicaAllocation, _name, _default)


def _shared_table() -> dict[str, Any]:
    first = object.__new__(ReplicaAllocation)
    for name in _FIELD_NAMES:
        if name not in HELD_BY_CLASS:
            object.__setattr__(first, name, None)
    return first.__dict__


_LEAN: dict[str, Any] = _shared_table()


def lean_members(members: dict[str, Any]) -> dict[str, Any]:
    """A ReplicaAllocation's `members` (every field's, as pydantic holds them) in a dict that
    shares its names with every other lean alloc's: those of `HELD_BY_CLASS` that hold their
    default are taken out of `members` (the caller's: it gives them up) and left out. Members
    with one of them at another value are returned in their own dict, as pydantic made it
    (those held at their default already taken out: the class holds them)."""
    for name, default in HELD_BY_CLASS.items():
        if name in members:
            value = members[name]
            if value is not default and value != default:
                return members
            del members[name]
    out = _LEAN.copy()
    out.update(members)
    return out


def is_lean(members: dict[str, Any]) -> bool:
    """Whether `members` are held as `lean_members` holds them (no held member, one shared
    table of names: measured by size, as Python shows no other sign of it)."""
    return not HELD_BY_CLASS.keys() & members.keys() and sys.getsizeof(members) < sys.getsizeof(dict(members))


# Every field in its order, those the class holds at their default: a lean alloc's members are
# laid over a copy of it to write its JSON (`replica_json`).
_WHOLE: dict[str, Any] = {name: HELD_BY_CLASS.get(name) for name in _FIELD_NAMES}
_AS_ALLOCATION = Allocation.__pydantic_serializer__
_NO_METRICS = {"metrics"}


def replica_json(a: ReplicaAllocation) -> bytes:
    """`a`'s JSON by its aliases, as its own serializer writes it, written without it: the wrap
    serializer that puts the held members back goes through a Python dict of every member and
    then pydantic's untyped encoding, where this lays them over the defaults and has the
    Allocation's typed serializer write them (about 40% less, and the event stream writes one
    per alloc changed: docs/experiments/event-stream.md)."""
    return members_json(a.__dict__)


def members_json(members: dict[str, Any], *, warnings: bool = True) -> bytes:
    """The JSON of a replica alloc holding `members` (lean or whole), the held defaults put
    back, by aliases. Without `warnings`, a member not of its field's type is written quietly
    as what it is (drover.model.allocjson writes markers so)."""
    whole = _WHOLE.copy()
    whole.update(members)
    alloc = unvalidated(Allocation, whole, set())
    return _AS_ALLOCATION.to_json(alloc, by_alias=True, exclude=_NO_METRICS, warnings=warnings)


def _with_held(a: ReplicaAllocation) -> ReplicaAllocation:
    """`a` with every member its own (for comparing a lean alloc with one that is not)."""
    members = a.__dict__
    if len(members) == len(_FIELD_NAMES):
        return a
    full = {name: members[name] if name in members else HELD_BY_CLASS[name] for name in _FIELD_NAMES}
    return unvalidated(ReplicaAllocation, full, a.__pydantic_fields_set__)
