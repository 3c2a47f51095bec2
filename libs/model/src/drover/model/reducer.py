"""The one reducer: how each event changes the cluster state.

Both the Postgres projections (written in the appending transaction) and every service's
in-memory replica apply events through `apply`, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from drover.model.alloc import (
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_UNKNOWN,
    Allocation,
    AllocDeploymentStatus,
)
from drover.model.deployment import DEPLOYMENT_SUCCESSFUL, Deployment
from drover.model.evaluation import JOB_CHANGE_TRIGGERS, Evaluation
from drover.model.events import (
    AllocRestartRequested,
    AllocsClientUpdated,
    AllocsTransitioned,
    DeploymentsCollected,
    DeploymentUpdated,
    DeploymentUpserted,
    EvalsCollected,
    EvalsUpserted,
    Event,
    JobCollected,
    JobDeregistered,
    JobRegistered,
    JobRestartDeleted,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    JobStabilityUpdated,
    NodeDeregistered,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodesCollected,
    NodeStatusUpdated,
    PlanApplied,
    ScalingEventRegistered,
)
from drover.model.gcreducer import deployments_collected, evals_collected, job_collected, nodes_collected
from drover.model.job import JOB_STATUS_DEAD, JOB_STATUS_PENDING
from drover.model.node import NODE_STATUS_DISCONNECTED, compute_class
from drover.model.placements import ReplicaPlacements
from drover.model.restartreducer import (
    cancel_for_deployment,
    restart_deleted,
    restart_signaled,
    restart_started,
    restart_updated,
)
from drover.model.scaling import JobScalingEvents
from drover.model.statewriter import StateWriter as StateWriter

M = TypeVar("M", Evaluation, Deployment)


def _indexed(obj: M, old: M | None, index: int) -> M:
    """`obj` stamped with the index it was written at (CreateIndex kept from `old`)."""
    return obj.model_copy(update={"create_index": old.create_index if old else index, "modify_index": index})


def apply(state: StateWriter, position: int, event: Event) -> None:
    """Apply one event recorded at `position` (the cluster index)."""
    state.bump(position)
    handler = _HANDLERS.get(event.type)
    if handler is None:
        raise ValueError(f"no reducer for event {event.type}")
    handler(state, position, event)


def _node_registered(state: StateWriter, index: int, ev: NodeRegistered) -> None:
    node = ev.node
    old = state.node(node.id)
    node = node.model_copy(
        update={
            "computed_class": compute_class(node),
            "create_index": old.create_index if old else index,
            "modify_index": index,
        }
    )
    state.upsert_node(node)


def _node_update(state: StateWriter, index: int, node_id: str, **update: object) -> None:
    old = state.node(node_id)
    if old is None:
        return
    state.upsert_node(old.model_copy(update={**update, "modify_index": index}))


def _node_status(state: StateWriter, index: int, ev: NodeStatusUpdated) -> None:
    _node_update(
        state,
        index,
        ev.node_id,
        status=ev.status,
        status_description=ev.status_description,
        status_updated_at=ev.at,
    )


def _node_eligibility(state: StateWriter, index: int, ev: NodeEligibilityUpdated) -> None:
    _node_update(state, index, ev.node_id, scheduling_eligibility=ev.eligibility)


def _node_drain(state: StateWriter, index: int, ev: NodeDrainUpdated) -> None:
    update: dict[str, object] = {"drain_strategy": ev.drain_strategy}
    if ev.eligibility:
        update["scheduling_eligibility"] = ev.eligibility
    _node_update(state, index, ev.node_id, **update)


def _node_deregistered(state: StateWriter, index: int, ev: NodeDeregistered) -> None:
    state.delete_node(ev.node_id)


def _job_registered(state: StateWriter, index: int, ev: JobRegistered) -> None:
    job = ev.job
    old = state.job(job.namespace, job.id)
    job = job.model_copy(
        update={
            "create_index": old.create_index if old else index,
            "modify_index": index,
            "job_modify_index": index,
            "status": old.status
            if (old and not job.stop)
            else (JOB_STATUS_DEAD if job.stop else JOB_STATUS_PENDING),
            # The same version registered again stays as stable as it was.
            "stable": old.stable if (old and old.version == job.version) else job.stable,
        }
    )
    state.upsert_job(job)


def _job_deregistered(state: StateWriter, index: int, ev: JobDeregistered) -> None:
    if ev.purge:
        state.delete_job(ev.namespace, ev.job_id)
        return
    old = state.job(ev.namespace, ev.job_id)
    if old is not None:
        state.upsert_job(
            old.model_copy(
                update={
                    "stop": True,
                    "status": JOB_STATUS_DEAD,
                    "modify_index": index,
                    "job_modify_index": index,
                }
            )
        )


def _job_stability(state: StateWriter, index: int, ev: JobStabilityUpdated) -> None:
    """The version's Stable flag; the job's too when it is the current version. Neither makes a
    new version nor moves JobModifyIndex (Nomad's UpdateJobStability)."""
    job = state.job(ev.namespace, ev.job_id)
    if job is not None and job.version == ev.version:
        state.upsert_job(job.model_copy(update={"stable": ev.stable, "modify_index": index}))
        return
    old = state.job_version(ev.namespace, ev.job_id, ev.version)
    if old is not None:
        state.upsert_job_version(old.model_copy(update={"stable": ev.stable, "modify_index": index}))


def _scaling_event(state: StateWriter, index: int, ev: ScalingEventRegistered) -> None:
    events = state.scaling_events(ev.namespace, ev.job_id) or JobScalingEvents(
        namespace=ev.namespace, job_id=ev.job_id
    )
    state.upsert_scaling_events(events.with_event(ev.task_group, ev.event, index))


def _evals(state: StateWriter, index: int, ev: EvalsUpserted) -> None:
    for e in ev.evals:
        old = state.eval(e.id)
        update: dict[str, object] = {
            "create_index": old.create_index if old else index,
            "modify_index": index,
        }
        if not e.job_modify_index:
            update["job_modify_index"] = _job_modify_index(state, e, old)
        state.upsert_eval(e.model_copy(update=update))


def _job_modify_index(state: StateWriter, e: Evaluation, old: Evaluation | None) -> int:
    """An eval given none: an update of the eval keeps the one it had; a new eval of a change to
    its job (appended with it, after it) takes the job's, known only now (none once purged)."""
    if old is not None:
        return old.job_modify_index
    if e.triggered_by not in JOB_CHANGE_TRIGGERS:
        return 0
    job = state.job(e.namespace, e.job_id)
    return job.job_modify_index if job is not None else 0


def _upsert_alloc(state: StateWriter, index: int, a: Allocation, at: int) -> Allocation:
    return _write_alloc(state, index, a, at, state.alloc(a.id))


def _write_alloc(
    state: StateWriter, index: int, a: Allocation, at: int, old: Allocation | None
) -> Allocation:
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


def _plan_applied(state: StateWriter, index: int, ev: PlanApplied) -> None:
    if ev.deployment is not None:
        old_dep = state.deployment(ev.deployment.id)
        state.upsert_deployment(_indexed(ev.deployment, old_dep, index))
        if old_dep is None:
            cancel_for_deployment(state, index, ev.deployment, ev.at)
    for upd in ev.deployment_updates:
        target = state.deployment(upd.get("DeploymentID", ""))
        if target is not None:
            state.upsert_deployment(
                target.model_copy(
                    update={
                        "status": upd.get("Status", target.status),
                        "status_description": upd.get("StatusDescription", target.status_description),
                        "modify_index": index,
                        # When it ended: the garbage collector's age of a deployment.
                        "modify_time": ev.at or target.modify_time,
                    }
                )
            )
            if upd.get("Status") == DEPLOYMENT_SUCCESSFUL:
                # A version whose deployment succeeded is stable: auto_revert goes back to it.
                job = state.job(target.namespace, target.job_id)
                if job is not None and job.version == target.job_version and not job.stable:
                    state.upsert_job(job.model_copy(update={"stable": True, "modify_index": index}))
    for a in ev.stopped:
        _upsert_alloc(state, index, a, ev.at)
    for a in ev.preempted:
        _upsert_alloc(state, index, a, ev.at)
    placed_by_dep: dict[tuple[str, str], int] = {}
    allocs, placed = _place_new(state, index, ev)
    for a in placed:
        if a.deployment_id:
            key = (a.deployment_id, a.task_group)
            placed_by_dep[key] = placed_by_dep.get(key, 0) + 1
    for a in allocs:
        old = state.alloc(a.id)
        is_new = old is None
        _write_alloc(state, index, a, ev.at, old)
        if a.previous_allocation:
            prev = state.alloc(a.previous_allocation)
            if prev is not None and prev.next_allocation != a.id:
                state.upsert_alloc(prev.model_copy(update={"next_allocation": a.id, "modify_index": index}))
        # Placed in a deployment: new, or moved into it by an in-place update (Nomad's
        # updateDeploymentWithAlloc).
        if a.deployment_id and (is_new or (old is not None and old.deployment_id != a.deployment_id)):
            key = (a.deployment_id, a.task_group)
            placed_by_dep[key] = placed_by_dep.get(key, 0) + 1
    for (dep_id, tg), n in placed_by_dep.items():
        current = state.deployment(dep_id)
        if current is not None and tg in current.task_groups:
            bumped = current.model_copy(deep=True)
            st = bumped.task_groups[tg]
            st.placed_allocs += n
            # The first placement starts the progress deadline (Nomad's updateDeploymentWithAlloc).
            if st.progress_deadline and not st.require_progress_by and ev.at:
                st.require_progress_by = ev.at + st.progress_deadline
            bumped.modify_index = index
            state.upsert_deployment(bumped)


def _place_new(state: StateWriter, index: int, ev: PlanApplied) -> tuple[list[Allocation], list[Allocation]]:
    """A replica's fast path for a plan's new placements: what `_write_alloc` gives an alloc
    without an old one, put in by the state itself (`place_columns` for the allocs a replica's
    decoding left in columns, `place_new` for the others). Returns the allocs left for the
    general path (all of them, for a state that is not a replica) and those placed. Leaves
    every alloc of the event in `ev.allocs`."""
    pending = ev.placements if isinstance(ev.placements, ReplicaPlacements) else None
    columns = pending.named_columns() if pending is not None else []
    place_new = getattr(state, "place_new", None)
    if (
        place_new is None
        or _replaces(ev.allocs)
        or (pending is not None and _replaces_in_columns(pending, columns))
    ):
        return ev.take_placements(), []
    update: dict[str, object] = {
        "modify_index": index,
        "alloc_modify_index": index,
        "create_index": index,
        "metrics": None,
    }
    if ev.at:
        update["modify_time"] = ev.at
    listed: list[Allocation] = ev.allocs
    known: list[Allocation] = place_new(listed, update) if listed else []
    if pending is not None:
        place_columns = getattr(state, "place_columns", None)
        out = place_columns(pending.template, columns, update) if place_columns is not None else None
        if out is None:
            built = pending.allocs(columns)
            out = (built, place_new(built, update))
        ev.allocs, ev.placements = [*listed, *out[0]], None
        known += out[1]
    if not known:
        return [], ev.allocs
    known_ids = {a.id for a in known}
    return known, [a for a in ev.allocs if a.id not in known_ids]


def _replaces(allocs: list[Allocation]) -> bool:
    return any(a.previous_allocation for a in allocs)


def _replaces_in_columns(pending: ReplicaPlacements, columns: list[tuple[str, list[Any]]]) -> bool:
    for name, values in columns:
        if name == "previous_allocation":
            return any(values)
    return bool(pending.template.previous_allocation)


def _client_updated(state: StateWriter, index: int, ev: AllocsClientUpdated) -> None:
    for u in ev.updates:
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


def _transitioned(state: StateWriter, index: int, ev: AllocsTransitioned) -> None:
    for alloc_id, t in ev.transitions.items():
        old = state.alloc(alloc_id)
        if old is None:
            continue
        merged = old.desired_transition.model_copy(update=t.model_dump(exclude_none=True))
        state.upsert_alloc(old.model_copy(update={"desired_transition": merged, "modify_index": index}))
    _evals(state, index, EvalsUpserted(evals=ev.evals))


def _deployment(state: StateWriter, index: int, ev: DeploymentUpserted) -> None:
    old = state.deployment(ev.deployment.id)
    state.upsert_deployment(
        ev.deployment.model_copy(
            update={"create_index": old.create_index if old else index, "modify_index": index}
        )
    )


def _deployment_updated(state: StateWriter, index: int, ev: DeploymentUpdated) -> None:
    old = state.deployment(ev.deployment_id)
    if old is not None:
        new = old.model_copy(deep=True)
        if ev.status:
            new.status = ev.status
        if ev.status_description:
            new.status_description = ev.status_description
        if ev.promote:
            for name, st in new.task_groups.items():
                if st.desired_canaries and (not ev.promote_groups or name in ev.promote_groups):
                    st.promoted = True
                    # The rest of the group gets a fresh progress deadline (Nomad does so).
                    if st.progress_deadline and st.require_progress_by and ev.at:
                        st.require_progress_by = ev.at + st.progress_deadline
        new.modify_index = index
        if ev.at:
            new.modify_time = ev.at
        state.upsert_deployment(new)
    _evals(state, index, EvalsUpserted(evals=ev.evals))


def _restart_requested(state: StateWriter, index: int, ev: AllocRestartRequested) -> None:
    old = state.alloc(ev.alloc_id)
    if old is not None:
        state.upsert_alloc(old.model_copy(update={"restart_request": ev.request, "modify_index": index}))


# Keyed by the event's type name: replicas decode some events into leaner subclasses.
_HANDLERS: dict[str, Callable[[StateWriter, int, Any], None]] = {
    cls.model_fields["type"].default: fn
    for cls, fn in (
        (NodeRegistered, _node_registered),
        (NodeStatusUpdated, _node_status),
        (NodeEligibilityUpdated, _node_eligibility),
        (NodeDrainUpdated, _node_drain),
        (NodeDeregistered, _node_deregistered),
        (JobRegistered, _job_registered),
        (JobDeregistered, _job_deregistered),
        (JobStabilityUpdated, _job_stability),
        (ScalingEventRegistered, _scaling_event),
        (EvalsUpserted, _evals),
        (PlanApplied, _plan_applied),
        (AllocsClientUpdated, _client_updated),
        (AllocsTransitioned, _transitioned),
        (DeploymentUpserted, _deployment),
        (DeploymentUpdated, _deployment_updated),
        (AllocRestartRequested, _restart_requested),
        (JobRestartStarted, restart_started),
        (JobRestartSignaled, restart_signaled),
        (JobRestartUpdated, restart_updated),
        (JobRestartDeleted, restart_deleted),
        (EvalsCollected, evals_collected),
        (DeploymentsCollected, deployments_collected),
        (NodesCollected, nodes_collected),
        (JobCollected, job_collected),
    )
}
