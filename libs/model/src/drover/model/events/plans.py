"""What the plan applier committed for one eval: allocs placed, updated, stopped and preempted,
and the deployment changes that come with them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from drover.model.alloc import Allocation, ReplicaAllocation
from drover.model.deployment import DEPLOYMENT_SUCCESSFUL, Deployment
from drover.model.events.allocs import write_alloc
from drover.model.events.base import Event, Reads
from drover.model.events.deployments import write_deployment
from drover.model.events.restarts import cancel_for_deployment
from drover.model.placements import (
    COLUMNS_FROM,
    Placements,
    ReplicaPlacements,
    encode_placements,
    metrics_object,
    with_metrics,
)

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

_ALLOC_METRICS: dict[str, Any] = {"allocs": {"__all__": {"metrics"}}}


class PlanApplied(Event):
    """What the plan applier committed for one eval (possibly one chunk of a large plan):
    allocs placed or updated, stopped, preempted; deployment changes."""

    type: Literal["PlanApplied"] = "PlanApplied"
    nomad_event_type: ClassVar[str | None] = "PlanResult"
    eval_id: str
    job_id: str = ""
    namespace: str = "default"
    allocs: list[Allocation] = Field(default_factory=list)
    stopped: list[Allocation] = Field(default_factory=list)
    preempted: list[Allocation] = Field(default_factory=list)
    deployment: Deployment | None = None
    deployment_updates: list[dict[str, str]] = Field(default_factory=list)
    at: int = 0
    # Allocs as stored in columns (drover.model.placements): decoding moves them into
    # `allocs`, so this is set only on the way in (and, in a replica's decoding, until the
    # reducer builds them into its state).
    placements: Placements | None = Field(default=None, exclude=True)
    # Whether decoding builds the allocs in `placements` at once.
    builds_placements: ClassVar[bool] = True
    # Placement metrics as JSON by alloc ID, for allocs whose `metrics` were never decoded (the
    # plan applier's, from a plan request: drover.scheduler.wire): stored as if they were.
    metrics_json: dict[str, str] = Field(default_factory=dict, exclude=True)

    def stream(self) -> str:
        return f"plan:{self.eval_id}"

    @model_validator(mode="after")
    def _take_placements(self) -> PlanApplied:
        if self.builds_placements:
            self.take_placements()
        return self

    def take_placements(self) -> list[Allocation]:
        """Every alloc of the event: those in `placements` built and moved into `allocs`."""
        if self.placements is not None:
            self.allocs = [*self.allocs, *self.placements.allocs()]
            self.placements = None
        return self.allocs

    def with_metrics(self) -> PlanApplied:
        """This event with the metrics in `metrics_json` decoded into its allocs (itself if
        there are none)."""
        texts = self.metrics_json
        if not texts or not any(a.metrics is None and a.id in texts for a in self.allocs):
            return self
        return self.model_copy(update={"allocs": with_metrics(self.allocs, texts), "metrics_json": {}})

    def to_json(self, *, metrics: bool = True) -> str:
        """The stored form: a plan of COLUMNS_FROM allocs or more has them in columns.
        `metrics`: False leaves the placement metrics out (see `metrics_object`)."""
        if len(self.allocs) < COLUMNS_FROM:
            if not metrics:
                return self.model_dump_json(by_alias=True, exclude_defaults=True, exclude=_ALLOC_METRICS)
            return self.with_metrics().model_dump_json(by_alias=True, exclude_defaults=True)
        body = self.model_dump_json(by_alias=True, exclude_defaults=True, exclude={"allocs"})
        encoded = encode_placements(self.allocs, metrics=metrics, metrics_json=self.metrics_json)
        return '{"Placements":' + encoded + ("}" if body == "{}" else "," + body[1:])

    def metrics_object(self) -> str | None:
        """The placement metrics as the log stores them beside the event: one JSON object by
        alloc ID (None if no alloc has any)."""
        return metrics_object(self.allocs, self.metrics_json)

    def reads(self, r: Reads) -> None:
        deployments: set[str] = set()
        for a in self.allocs:
            (r.new if r.trust_new and a.create_index == 0 else r.allocs).append(a.id)
            if a.previous_allocation:
                r.allocs.append(a.previous_allocation)
            if a.deployment_id:
                deployments.add(a.deployment_id)
        r.deployments.extend(deployments)
        for a in (*self.stopped, *self.preempted):
            r.allocs.append(a.id)
            r.nodes.append(a.node_id)
        if self.deployment is not None:
            r.deployments.append(self.deployment.id)
            r.restarts_of.append((self.namespace, self.job_id))
        r.deployments.extend(str(u.get("DeploymentID", "")) for u in self.deployment_updates)

    def apply_to(self, state: StateWriter, index: int) -> None:
        if self.deployment is not None and write_deployment(state, index, self.deployment) is None:
            cancel_for_deployment(state, index, self.deployment, self.at)
        for upd in self.deployment_updates:
            self._update_deployment(state, index, upd)
        for a in (*self.stopped, *self.preempted):
            write_alloc(state, index, a, self.at, state.alloc(a.id))
        placed_by_dep: dict[tuple[str, str], int] = {}
        allocs, placed = _place_new(state, index, self)
        for a in placed:
            if a.deployment_id:
                key = (a.deployment_id, a.task_group)
                placed_by_dep[key] = placed_by_dep.get(key, 0) + 1
        for a in allocs:
            old = state.alloc(a.id)
            write_alloc(state, index, a, self.at, old)
            if a.previous_allocation:
                prev = state.alloc(a.previous_allocation)
                if prev is not None and prev.next_allocation != a.id:
                    state.upsert_alloc(
                        prev.model_copy(update={"next_allocation": a.id, "modify_index": index})
                    )
            # Placed in a deployment: new, or moved into it by an in-place update (Nomad's
            # updateDeploymentWithAlloc).
            if a.deployment_id and (old is None or old.deployment_id != a.deployment_id):
                key = (a.deployment_id, a.task_group)
                placed_by_dep[key] = placed_by_dep.get(key, 0) + 1
        for (dep_id, tg), n in placed_by_dep.items():
            self._count_placed(state, index, dep_id, tg, n)

    def _update_deployment(self, state: StateWriter, index: int, upd: dict[str, str]) -> None:
        target = state.deployment(upd.get("DeploymentID", ""))
        if target is None:
            return
        update = {
            "status": upd.get("Status", target.status),
            "status_description": upd.get("StatusDescription", target.status_description),
            "modify_index": index,
            # When it ended: the garbage collector's age of a deployment.
            "modify_time": self.at or target.modify_time,
        }
        state.upsert_deployment(target.model_copy(update=update))
        if upd.get("Status") == DEPLOYMENT_SUCCESSFUL:
            # A version whose deployment succeeded is stable: auto_revert goes back to it.
            job = state.job(target.namespace, target.job_id)
            if job is not None and job.version == target.job_version and not job.stable:
                state.upsert_job(job.model_copy(update={"stable": True, "modify_index": index}))

    def _count_placed(self, state: StateWriter, index: int, dep_id: str, tg: str, n: int) -> None:
        current = state.deployment(dep_id)
        if current is None or tg not in current.task_groups:
            return
        bumped = current.model_copy(deep=True)
        st = bumped.task_groups[tg]
        st.placed_allocs += n
        # The first placement starts the progress deadline (Nomad's updateDeploymentWithAlloc).
        if st.progress_deadline and not st.require_progress_by and self.at:
            st.require_progress_by = self.at + st.progress_deadline
        bumped.modify_index = index
        state.upsert_deployment(bumped)


class ReplicaPlanApplied(PlanApplied):
    """PlanApplied as replicas decode it: allocs without their metrics, and those stored in
    columns left in `placements` for the reducer, which builds them straight into a replica's
    state (`InMemoryState.place_columns`) and then into `allocs`. Read `take_placements()`,
    not `allocs`, before the event is applied."""

    builds_placements: ClassVar[bool] = False

    allocs: list[ReplicaAllocation] = Field(default_factory=list)  # type: ignore[assignment]
    stopped: list[ReplicaAllocation] = Field(default_factory=list)  # type: ignore[assignment]
    preempted: list[ReplicaAllocation] = Field(default_factory=list)  # type: ignore[assignment]
    placements: ReplicaPlacements | None = Field(default=None, exclude=True)  # type: ignore[assignment]


def _place_new(
    state: StateWriter, index: int, plan: PlanApplied
) -> tuple[list[Allocation], list[Allocation]]:
    """A replica's fast path for a plan's new placements: what `write_alloc` gives an alloc
    without an old one, put in by the state itself (`place_columns` for the allocs a replica's
    decoding left in columns, `place_new` for the others). Returns the allocs left for the
    general path (all of them, for a state that is not a replica) and those placed. Leaves
    every alloc of the event in `plan.allocs`."""
    pending = plan.placements if isinstance(plan.placements, ReplicaPlacements) else None
    columns = pending.named_columns() if pending is not None else []
    place_new = getattr(state, "place_new", None)
    if (
        place_new is None
        or _replaces(plan.allocs)
        or (pending is not None and _replaces_in_columns(pending, columns))
    ):
        return plan.take_placements(), []
    update: dict[str, object] = {
        "modify_index": index,
        "alloc_modify_index": index,
        "create_index": index,
        "metrics": None,
    }
    if plan.at:
        update["modify_time"] = plan.at
    listed: list[Allocation] = plan.allocs
    known: list[Allocation] = place_new(listed, update) if listed else []
    if pending is not None:
        place_columns = getattr(state, "place_columns", None)
        out = place_columns(pending.template, columns, update) if place_columns is not None else None
        if out is None:
            built = pending.allocs(columns)
            out = (built, place_new(built, update))
        plan.allocs, plan.placements = [*listed, *out[0]], None
        known += out[1]
    if not known:
        return [], plan.allocs
    known_ids = {a.id for a in known}
    return known, [a for a in plan.allocs if a.id not in known_ids]


def _replaces(allocs: list[Allocation]) -> bool:
    return any(a.previous_allocation for a in allocs)


def _replaces_in_columns(pending: ReplicaPlacements, columns: list[tuple[str, list[Any]]]) -> bool:
    for name, values in columns:
        if name == "previous_allocation":
            return any(values)
    return bool(pending.template.previous_allocation)
