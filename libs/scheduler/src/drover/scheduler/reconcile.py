"""The reconciler for service and batch jobs: compare the job's desired state with its allocs
and decide, per task group, what to place, stop, update in place or destructively, canary,
migrate, reschedule now or later, disconnect and reconnect.

Pure: it reads allocs, the job (and the job versions allocs were placed with), tainted nodes,
the latest deployment and the time it is given, and returns a `ReconcileResults`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from drover.model import (
    Allocation,
    AllocState,
    Deployment,
    DeploymentState,
    Evaluation,
    Job,
    Node,
    ReschedulePolicy,
    TaskGroup,
)
from drover.model.alloc import (
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_PENDING,
    ALLOC_CLIENT_RUNNING,
    ALLOC_CLIENT_UNKNOWN,
    ALLOC_DESIRED_RUN,
    ALLOC_DESIRED_STOP,
    ALLOC_STATE_FIELD_CLIENT_STATUS,
)
from drover.model.defaults import default_reschedule_policy
from drover.model.deployment import (
    DEPLOYMENT_CANCELLED,
    DEPLOYMENT_FAILED,
    DEPLOYMENT_PAUSED,
    DEPLOYMENT_PENDING,
    DEPLOYMENT_SUCCESSFUL,
    DESC_NEWER_JOB,
    DESC_RUNNING_NEEDS_PROMOTION,
    DESC_STOPPED_JOB,
    DESC_SUCCESSFUL,
)
from drover.model.evaluation import (
    EVAL_STATUS_PENDING,
    TRIGGER_MAX_DISCONNECT_TIMEOUT,
    TRIGGER_RETRY_FAILED_ALLOC,
)
from drover.model.node import NODE_STATUS_DISCONNECTED, NODE_STATUS_READY
from drover.scheduler.names import AllocNameIndex
from drover.scheduler.plan import DeploymentStatusUpdate, DesiredUpdates
from drover.scheduler.reschedule import (
    BATCHED_FAILED_ALLOC_WINDOW,
    RESCHEDULE_WINDOW,
    next_reschedule_time,
    next_reschedule_time_from,
)

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
    alloc: Allocation
    description: str
    client_status: str = ""
    followup_eval_id: str = ""


@dataclass
class DestructiveRequest:
    name: str
    task_group: TaskGroup
    stop: Allocation
    description: str = ALLOC_UPDATING


@dataclass
class ReconcileResults:
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


AllocSet = dict[str, Allocation]
# Decides whether an existing alloc needs nothing, a destructive update, or an in-place update
# (then returns the updated alloc). Supplied by the scheduler, which can check node fit.
UpdateFn = Callable[[Allocation, Job, TaskGroup], tuple[bool, bool, Allocation | None]]
JobLookup = Callable[[Allocation], Job | None]
IdFn = Callable[[], str]


def _union(*sets: AllocSet) -> AllocSet:
    out: AllocSet = {}
    for s in sets:
        out.update(s)
    return out


def _diff(a: AllocSet, *others: AllocSet) -> AllocSet:
    return {k: v for k, v in a.items() if not any(k in o for o in others)}


def _name_order(s: AllocSet) -> list[Allocation]:
    return sorted(s.values(), key=lambda a: (a.index(), a.name, a.id))


class Reconciler:
    """One reconciliation of one job. Build it, call `compute()`."""

    def __init__(
        self,
        *,
        job_id: str,
        namespace: str,
        job: Job | None,
        allocs: Iterable[Allocation],
        tainted_nodes: dict[str, Node | None],
        deployment: Deployment | None,
        eval_id: str,
        eval_priority: int,
        now: int,
        batch: bool,
        update_fn: UpdateFn,
        job_lookup: JobLookup,
        new_id: IdFn,
        supports_disconnected_clients: bool = True,
    ) -> None:
        self.job_id = job_id
        self.namespace = namespace
        self.job = job
        self.allocs = list(allocs)
        self.tainted = tainted_nodes
        self.deployment = deployment.model_copy(deep=True) if deployment is not None else None
        self.old_deployment: Deployment | None = None
        self.eval_id = eval_id
        self.eval_priority = eval_priority
        self.now = now
        self.batch = batch
        self.update_fn = update_fn
        self.job_lookup = job_lookup
        self.new_id = new_id
        self.supports_disconnect = supports_disconnected_clients
        self.deployment_paused = False
        self.deployment_failed = False
        self.result = ReconcileResults()

    # --- helpers over an alloc's own job version ---
    def _tg_of(self, alloc: Allocation) -> TaskGroup | None:
        j = self.job_lookup(alloc) or self.job
        return j.lookup_task_group(alloc.task_group) if j is not None else None

    def _policy_of(self, alloc: Allocation) -> ReschedulePolicy | None:
        j = self.job_lookup(alloc) or self.job
        if j is None or j.is_system():
            return None
        tg = j.lookup_task_group(alloc.task_group)
        if tg is None:
            return None
        return tg.reschedule_policy if tg.reschedule_policy is not None else default_reschedule_policy(j.type)

    def _lost_after(self, alloc: Allocation) -> int:
        tg = self._tg_of(alloc)
        return tg.lost_after() if tg is not None else 0

    def _supports_disconnect(self, alloc: Allocation) -> bool:
        return self.supports_disconnect and self._lost_after(alloc) > 0

    def _expired(self, alloc: Allocation) -> bool:
        if alloc.client_status != ALLOC_CLIENT_UNKNOWN:
            return False
        last = alloc.last_unknown()
        timeout = self._lost_after(alloc)
        if last == 0 or timeout == 0:
            return False
        return self.now >= last + timeout

    def _desired(self, tg: str) -> DesiredUpdates:
        return self.result.desired_tg_updates.setdefault(tg, DesiredUpdates())

    def _mark_stop(self, allocs: Iterable[Allocation], client_status: str, desc: str) -> None:
        for a in allocs:
            self.result.stop.append(StopRequest(alloc=a, description=desc, client_status=client_status))

    # --- the main entry ---
    def compute(self) -> ReconcileResults:
        by_group: dict[str, AllocSet] = {}
        for a in self.allocs:
            by_group.setdefault(a.task_group, {})[a.id] = a

        self._cancel_unneeded_deployments()

        if self.job is None or self.job.stopped():
            for tg_name, group in by_group.items():
                self._handle_stop(tg_name, group)
            return self.result

        d = self.deployment
        self.deployment_paused = d is not None and d.status in (DEPLOYMENT_PAUSED, DEPLOYMENT_PENDING)
        self.deployment_failed = d is not None and d.status == DEPLOYMENT_FAILED

        complete = True
        group_names = {tg.name for tg in self.job.task_groups}
        for tg_name, group in by_group.items():
            if tg_name not in group_names:
                self._handle_stop(tg_name, group)
        for tg in self.job.task_groups:
            complete = self._compute_group(tg, by_group.get(tg.name, {})) and complete

        if self.result.deployment is not None and self.result.deployment.requires_promotion():
            self.result.deployment.status_description = DESC_RUNNING_NEEDS_PROMOTION
        if self.deployment is not None and complete and self.deployment.active():
            self.result.deployment_updates.append(
                DeploymentStatusUpdate(
                    deployment_id=self.deployment.id,
                    status=DEPLOYMENT_SUCCESSFUL,
                    status_description=DESC_SUCCESSFUL,
                )
            )
        return self.result

    def _handle_stop(self, tg_name: str, group: AllocSet) -> None:
        live = [a for a in group.values() if not a.terminal_status()]
        self._mark_stop(live, "", ALLOC_NOT_NEEDED)
        self._desired(tg_name).stop += len(live)

    def _cancel_unneeded_deployments(self) -> None:
        d = self.deployment
        if self.job is None or self.job.stopped():
            if d is not None and d.active():
                self.result.deployment_updates.append(
                    DeploymentStatusUpdate(
                        deployment_id=d.id, status=DEPLOYMENT_CANCELLED, status_description=DESC_STOPPED_JOB
                    )
                )
            self.old_deployment, self.deployment = d, None
            return
        if d is None:
            return
        if d.job_create_index != self.job.create_index or d.job_version != self.job.version:
            if d.active():
                self.result.deployment_updates.append(
                    DeploymentStatusUpdate(
                        deployment_id=d.id, status=DEPLOYMENT_CANCELLED, status_description=DESC_NEWER_JOB
                    )
                )
            self.old_deployment, self.deployment = d, None
        elif d.status in (DEPLOYMENT_SUCCESSFUL, DEPLOYMENT_CANCELLED):
            self.old_deployment, self.deployment = d, None

    def _cancel_unneeded_canaries(
        self, group: AllocSet, desired: DesiredUpdates
    ) -> tuple[AllocSet, AllocSet]:
        """Stop canaries of an older or failed deployment; return (current canaries, rest)."""
        stop_ids: list[str] = []
        for dep in (self.old_deployment, self.deployment if self.deployment_failed else None):
            if dep is None:
                continue
            for st in dep.task_groups.values():
                if not st.promoted:
                    stop_ids.extend(st.placed_canaries)
        stop_set = {i: group[i] for i in stop_ids if i in group and not group[i].terminal_status()}
        self._mark_stop(stop_set.values(), "", ALLOC_NOT_NEEDED)
        desired.stop += len(stop_set)
        group = _diff(group, {i: group[i] for i in stop_ids if i in group})

        canaries: AllocSet = {}
        if self.deployment is not None:
            ids = [i for st in self.deployment.task_groups.values() for i in st.placed_canaries]
            canaries = {i: group[i] for i in ids if i in group}
            untainted, migrate, lost, *_ = self._filter_by_tainted(canaries)
            # Transient: not counted in the desired changes (the deployment is still going).
            self._mark_stop(migrate.values(), "", ALLOC_MIGRATING)
            self._mark_stop(lost.values(), ALLOC_CLIENT_LOST, ALLOC_LOST)
            canaries = untainted
            group = _diff(group, migrate, lost)
        return canaries, group

    def _filter_by_tainted(
        self, allocs: AllocSet
    ) -> tuple[AllocSet, AllocSet, AllocSet, AllocSet, AllocSet, AllocSet, AllocSet]:
        """Split by node health: untainted, migrate, lost, disconnecting, reconnecting, ignore,
        expiring."""
        untainted: AllocSet = {}
        migrate: AllocSet = {}
        lost: AllocSet = {}
        disconnecting: AllocSet = {}
        reconnecting: AllocSet = {}
        ignore: AllocSet = {}
        expiring: AllocSet = {}
        for a in allocs.values():
            supports = self._supports_disconnect(a)
            reconnect = expired = False
            if supports and a.client_status in (
                ALLOC_CLIENT_UNKNOWN,
                ALLOC_CLIENT_RUNNING,
                ALLOC_CLIENT_FAILED,
            ):
                reconnect = a.needs_to_reconnect()
                if reconnect:
                    expired = self._expired(a)
            if (
                supports
                and reconnect
                and a.desired_status == ALLOC_DESIRED_RUN
                and a.client_status == ALLOC_CLIENT_FAILED
            ):
                reconnecting[a.id] = a
                continue
            node_tainted = a.node_id in self.tainted
            node = self.tainted.get(a.node_id)
            if node is not None:
                if node.status == NODE_STATUS_DISCONNECTED:
                    if supports:
                        if a.client_status == ALLOC_CLIENT_RUNNING:
                            disconnecting[a.id] = a
                            continue
                        if a.client_status == ALLOC_CLIENT_PENDING:
                            lost[a.id] = a
                            continue
                    elif not a.terminal_status():
                        lost[a.id] = a
                        continue
                elif node.status == NODE_STATUS_READY and reconnect:
                    (lost if expired else reconnecting)[a.id] = a
                    continue
            if a.terminal_status() and not reconnect:
                untainted[a.id] = a
                continue
            if a.desired_transition.should_migrate():
                migrate[a.id] = a
                continue
            if supports and self._expired(a):
                expiring[a.id] = a
                continue
            if supports and a.client_status == ALLOC_CLIENT_UNKNOWN and a.desired_status == ALLOC_DESIRED_RUN:
                untainted[a.id] = a
                continue
            if (
                supports
                and reconnect
                and a.client_status == ALLOC_CLIENT_FAILED
                and a.desired_status == ALLOC_DESIRED_STOP
            ):
                ignore[a.id] = a
                continue
            if not node_tainted or (node is not None and node.status == NODE_STATUS_READY):
                if reconnect:
                    (lost if expired else reconnecting)[a.id] = a
                    continue
                untainted[a.id] = a
                continue
            if node is None or node.terminal_status():
                lost[a.id] = a
                continue
            untainted[a.id] = a
        return untainted, migrate, lost, disconnecting, reconnecting, ignore, expiring

    def _filter_by_rescheduleable(
        self, allocs: AllocSet, disconnecting: bool
    ) -> tuple[AllocSet, AllocSet, list[tuple[Allocation, int]]]:
        """Split into untainted, reschedule-now and reschedule-later (alloc, due time)."""
        untainted: AllocSet = {}
        now_set: AllocSet = {}
        later: list[tuple[Allocation, int]] = []
        for a in allocs.values():
            if disconnecting and a.client_status == ALLOC_CLIENT_UNKNOWN:
                continue
            # A failed alloc that already has a replacement is done with.
            if a.next_allocation and a.terminal_status():
                continue
            is_untainted, ignore = self._should_filter(a)
            if is_untainted and not disconnecting:
                untainted[a.id] = a
            if ignore:
                continue
            now_ok, later_ok, when = self._update_by_rescheduleable(a, disconnecting)
            if now_ok:
                now_set[a.id] = a
                continue
            untainted[a.id] = a
            if later_ok:
                later.append((a, when))
        return untainted, now_set, later

    def _should_filter(self, a: Allocation) -> tuple[bool, bool]:
        """(untainted, ignore) for an alloc before reschedule checks."""
        if self.batch:
            if a.server_terminal():
                return (True, False) if a.ran_successfully() else (False, True)
            if a.client_status != ALLOC_CLIENT_FAILED:
                return True, False
            return False, False
        if a.server_terminal():
            return False, True
        if a.client_status in ("complete", ALLOC_CLIENT_LOST):
            return False, True
        return False, False

    def _update_by_rescheduleable(self, a: Allocation, disconnecting: bool) -> tuple[bool, bool, int]:
        d = self.deployment
        # Not during an active deployment the alloc belongs to, unless marked for it (seed 000).
        if (
            d is not None
            and a.deployment_id == d.id
            and d.active()
            and not a.desired_transition.should_reschedule()
        ):
            return False, False, 0
        now_ok = a.desired_transition.should_force_reschedule()
        policy = self._policy_of(a)
        if disconnecting:
            # With a disconnect block, a disconnected alloc is replaced at once when
            # disconnect.replace is set (Nomad's RescheduleTimeOnDisconnect), whatever the
            # reschedule policy says.
            tg = self._tg_of(a)
            if tg is None or tg.disconnect is None:
                return now_ok, False, 0
            when, eligible = self.now, tg.disconnect.replace
        elif a.client_status == ALLOC_CLIENT_UNKNOWN and a.followup_eval_id == self.eval_id:
            when, eligible = next_reschedule_time_from(a, policy, a.last_unknown()) if policy else (0, False)
        else:
            when, eligible = next_reschedule_time(a, policy)
        if eligible and (a.followup_eval_id == self.eval_id or when - self.now <= RESCHEDULE_WINDOW):
            return True, False, when
        later = eligible and not a.followup_eval_id
        return now_ok, later, when

    # --- follow-up evals ---
    def _new_eval(self, tg_name: str, trigger: str, wait_until: int, desc: str) -> Evaluation:
        assert self.job is not None
        return Evaluation(
            id=self.new_id(),
            namespace=self.namespace,
            priority=self.eval_priority,
            type=self.job.type,
            triggered_by=trigger,
            job_id=self.job_id,
            status=EVAL_STATUS_PENDING,
            status_description=desc,
            wait_until=wait_until,
            previous_eval=self.eval_id,
        )

    def _reschedule_later_evals(self, later: list[tuple[Allocation, int]], tg_name: str) -> None:
        """Batch follow-up evals: failures due within 5 s of the first in a batch share one."""
        if not later:
            return
        later = sorted(later, key=lambda x: x[1])
        batch_start = later[0][1]
        ev = self._new_eval(tg_name, TRIGGER_RETRY_FAILED_ALLOC, batch_start, RESCHEDULING_FOLLOWUP_DESC)
        self.result.followup_evals.append(ev)
        for alloc, when in later:
            if when - batch_start >= BATCHED_FAILED_ALLOC_WINDOW:
                batch_start = when
                ev = self._new_eval(tg_name, TRIGGER_RETRY_FAILED_ALLOC, when, RESCHEDULING_FOLLOWUP_DESC)
                self.result.followup_evals.append(ev)
            updated = alloc.model_copy(update={"followup_eval_id": ev.id})
            self.result.attribute_updates[alloc.id] = updated

    def _disconnect_timeout_evals(self, disconnecting: AllocSet, tg_name: str) -> dict[str, str]:
        """Mark disconnecting allocs unknown and create one eval for when they expire."""
        out: dict[str, str] = {}
        if not disconnecting:
            return out
        by_time: dict[int, Evaluation] = {}
        for a in _name_order(disconnecting):
            expiry = self.now + self._lost_after(a)
            ev = by_time.get(expiry)
            if ev is None:
                ev = self._new_eval(
                    tg_name, TRIGGER_MAX_DISCONNECT_TIMEOUT, expiry, DISCONNECT_TIMEOUT_FOLLOWUP_DESC
                )
                by_time[expiry] = ev
                self.result.followup_evals.append(ev)
            out[a.id] = ev.id
            states = [
                *a.alloc_states,
                AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value=ALLOC_CLIENT_UNKNOWN, time=self.now),
            ]
            self.result.disconnect_updates[a.id] = a.model_copy(
                update={
                    "client_status": ALLOC_CLIENT_UNKNOWN,
                    "client_description": ALLOC_UNKNOWN,
                    "alloc_states": states,
                    "followup_eval_id": ev.id,
                }
            )
        return out

    def _reconcile_reconnecting(self, reconnecting: AllocSet, group: AllocSet) -> tuple[AllocSet, AllocSet]:
        """For each reconnecting alloc choose it or its replacement (disconnect.reconcile).
        Returns (reconnected originals to keep, replacements/originals stopped)."""
        keep: AllocSet = {}
        stopped: AllocSet = {}
        replacements: dict[str, Allocation] = {}
        for a in group.values():
            if a.previous_allocation and not a.terminal_status():
                replacements[a.previous_allocation] = a
        for orig in _name_order(reconnecting):
            repl = replacements.get(orig.id)
            failed = orig.client_status == ALLOC_CLIENT_FAILED or orig.desired_status != ALLOC_DESIRED_RUN
            tg = self._tg_of(orig)
            mode = tg.disconnect.reconcile if tg is not None and tg.disconnect is not None else "best_score"
            keep_original = not failed
            if repl is not None and not failed:
                if mode == "keep_replacement":
                    keep_original = False
                elif mode == "longest_running":
                    keep_original = _started(orig) <= _started(repl) or _started(repl) == 0
                # best_score and keep_original: the original was placed by the scheduler's own
                # choice and is still running, so it wins; the replacement goes.
            if keep_original:
                keep[orig.id] = orig
                states = [
                    *orig.alloc_states,
                    AllocState(
                        field=ALLOC_STATE_FIELD_CLIENT_STATUS, value=ALLOC_CLIENT_RUNNING, time=self.now
                    ),
                ]
                self.result.reconnect_updates[orig.id] = orig.model_copy(update={"alloc_states": states})
                self._desired(orig.task_group).reconnect += 1
                if repl is not None:
                    self.result.stop.append(StopRequest(alloc=repl, description=ALLOC_RECONNECTED))
                    self._desired(orig.task_group).stop += 1
                    stopped[repl.id] = repl
            else:
                if not orig.server_terminal():
                    self.result.stop.append(StopRequest(alloc=orig, description=ALLOC_NOT_NEEDED))
                    self._desired(orig.task_group).stop += 1
                stopped[orig.id] = orig
        return keep, stopped

    # --- per group ---
    def _compute_group(self, tg: TaskGroup, group: AllocSet) -> bool:
        assert self.job is not None
        desired = self._desired(tg.name)
        if tg.count == 0:
            # Scaled to zero: everything the server still wants running stops, failed allocs
            # included, and nothing is rescheduled.
            live = [a for a in _name_order(group) if not a.server_terminal()]
            self._mark_stop(live, "", ALLOC_NOT_NEEDED)
            desired.stop += len(live)
            return True
        dstate: DeploymentState | None = None
        existing_deployment = False
        if self.deployment is not None and tg.name in self.deployment.task_groups:
            dstate = self.deployment.task_groups[tg.name]
            existing_deployment = True
        if dstate is None:
            dstate = DeploymentState()
            if tg.update is not None and tg.update.rolling():
                dstate.auto_revert = tg.update.auto_revert
                dstate.auto_promote = tg.update.auto_promote
                dstate.progress_deadline = tg.update.progress_deadline

        if self.batch:
            # Finished allocs of an older version of a batch job are history: the new version
            # runs again in full (Nomad's filterOldTerminalAllocs).
            old = {k: a for k, a in group.items() if a.terminal_status() and a.job_version < self.job.version}
            desired.ignore += len(old)
            group = _diff(group, old)

        canaries, group = self._cancel_unneeded_canaries(group, desired)
        untainted, migrate, lost, disconnecting, reconnecting, ignore, expiring = self._filter_by_tainted(
            group
        )
        desired.ignore += len(ignore)

        untainted, reschedule_now, reschedule_later = self._filter_by_rescheduleable(untainted, False)

        if reconnecting:
            keep, stopped = self._reconcile_reconnecting(reconnecting, group)
            untainted = _diff(_union(untainted, keep), stopped)
            reschedule_now = _diff(reschedule_now, stopped)

        timeout_evals: dict[str, str] = {}
        if disconnecting:
            if tg.lost_after() > 0:
                un_d, now_d, later_d = self._filter_by_rescheduleable(disconnecting, True)
                reschedule_now = _union(reschedule_now, now_d)
                untainted = _union(untainted, un_d)
                reschedule_later.extend(later_d)
            timeout_evals = self._disconnect_timeout_evals(disconnecting, tg.name)
            desired.disconnect += len(disconnecting)

        if expiring:
            lost = _union(lost, expiring)

        self._reschedule_later_evals(reschedule_later, tg.name)
        desired.reschedule_later += len(reschedule_later)

        name_index = AllocNameIndex(
            self.job_id, tg.name, tg.count, _union(untainted, migrate, reschedule_now, lost).values()
        )

        is_canarying = dstate.desired_canaries != 0 and not dstate.promoted
        stop = self._compute_stop(
            tg, name_index, untainted, migrate, lost, canaries, is_canarying, timeout_evals
        )
        desired.stop += len(stop)
        untainted = _diff(untainted, stop)

        ignore_set, inplace, destructive = self._compute_updates(tg, untainted)
        desired.ignore += len(ignore_set)
        desired.in_place_update += len(inplace)
        if not existing_deployment:
            dstate.desired_total += len(destructive) + len(inplace)

        if is_canarying:
            untainted = _diff(untainted, canaries)
        requires_canaries = (
            tg.update is not None
            and tg.update.rolling()
            and bool(destructive)
            and len(canaries) < tg.update.canary
            and not dstate.promoted
        )
        if requires_canaries:
            assert tg.update is not None
            dstate.desired_canaries = tg.update.canary
            if not self.deployment_paused and not self.deployment_failed:
                n = tg.update.canary - len(canaries)
                desired.canary += n
                for name in name_index.next_canaries(n, canaries.values(), destructive.values()):
                    self.result.place.append(PlaceRequest(name=name, task_group=tg, canary=True))

        is_canarying = dstate.desired_canaries != 0 and not dstate.promoted
        under = self._under_provisioned_by(tg, untainted, destructive, migrate, is_canarying)

        place = self._compute_placements(
            tg, name_index, untainted, migrate, reschedule_now, lost, is_canarying
        )
        if len(place) > tg.count:
            # Reschedules alone can exceed a count just lowered: place no more than the count
            # and let the surplus failed allocs go.
            surplus = place[tg.count :]
            place = place[: tg.count]
            for p in surplus:
                if p.previous is not None and not p.previous.server_terminal():
                    self.result.stop.append(StopRequest(alloc=p.previous, description=ALLOC_NOT_NEEDED))
                    desired.stop += 1
                    reschedule_now.pop(p.previous.id, None)
        if not existing_deployment:
            dstate.desired_total += len(place)

        place_ready = not self.deployment_paused and not self.deployment_failed and not is_canarying
        under = self._compute_replacements(place_ready, desired, place, reschedule_now, lost, under)

        if place_ready:
            n = min(len(destructive), under)
            desired.destructive_update += n
            desired.ignore += len(destructive) - n
            for a in _name_order(destructive)[:n]:
                self.result.destructive.append(DestructiveRequest(name=a.name, task_group=tg, stop=a))
        else:
            desired.ignore += len(destructive)

        desired.migrate += len(migrate)
        for a in _name_order(migrate):
            self.result.stop.append(StopRequest(alloc=a, description=ALLOC_MIGRATING))
            self.result.place.append(
                PlaceRequest(
                    name=a.name,
                    task_group=tg,
                    previous=a,
                    canary=a.is_canary(),
                    downgrade_non_canary=is_canarying and not a.is_canary(),
                )
            )

        self._create_deployment(tg, existing_deployment, dstate, group, destructive)

        complete = (
            not destructive
            and not inplace
            and not place
            and not migrate
            and not reschedule_now
            and not reschedule_later
            and not requires_canaries
        )
        if complete and self.deployment is not None:
            st = self.deployment.task_groups.get(tg.name)
            if st is not None and (
                st.healthy_allocs < max(st.desired_total, st.desired_canaries)
                or (st.desired_canaries > 0 and not st.promoted)
            ):
                complete = False
        return complete

    def _compute_stop(
        self,
        tg: TaskGroup,
        name_index: AllocNameIndex,
        untainted: AllocSet,
        migrate: AllocSet,
        lost: AllocSet,
        canaries: AllocSet,
        is_canarying: bool,
        followups: dict[str, str],
    ) -> AllocSet:
        stop: AllocSet = dict(lost)
        for a in lost.values():
            self.result.stop.append(
                StopRequest(
                    alloc=a,
                    description=ALLOC_LOST,
                    client_status=ALLOC_CLIENT_LOST,
                    followup_eval_id=followups.get(a.id, ""),
                )
            )
        if is_canarying:
            untainted = _diff(untainted, canaries)
        known = [a for a in untainted.values() if a.client_status != ALLOC_CLIENT_UNKNOWN]
        remove = len(known) + len(migrate) - tg.count
        if remove <= 0:
            return stop
        untainted = {k: a for k, a in untainted.items() if not a.terminal_status()}

        def take(a: Allocation) -> bool:
            nonlocal remove
            stop[a.id] = a
            self.result.stop.append(StopRequest(alloc=a, description=ALLOC_NOT_NEEDED))
            untainted.pop(a.id, None)
            remove -= 1
            return remove == 0

        # After promotion, the allocs the canaries replace (same names) go first.
        if not is_canarying and canaries:
            names = {c.name for c in canaries.values()}
            for a in _name_order(_diff(untainted, canaries)):
                if a.name in names and take(a):
                    return stop
        # Then allocs that would have to migrate anyway, highest index first.
        if migrate:
            mig_index = AllocNameIndex(self.job_id, tg.name, tg.count, migrate.values())
            remove_names = mig_index.highest(remove)
            for a in _name_order(migrate):
                if a.name in remove_names:
                    migrate.pop(a.id)
                    name_index.unset_index(a.index())
                    stop[a.id] = a
                    self.result.stop.append(StopRequest(alloc=a, description=ALLOC_NOT_NEEDED))
                    remove -= 1
                    if remove == 0:
                        return stop
        # Scale down: highest indexes first.
        remove_names = name_index.highest(remove)
        for a in sorted(untainted.values(), key=lambda x: (-x.index(), x.id)):
            if a.name in remove_names and take(a):
                return stop
        # Duplicate names can leave some over; stop any.
        for a in sorted(untainted.values(), key=lambda x: (-x.index(), x.id)):
            if take(a):
                return stop
        return stop

    def _compute_updates(self, tg: TaskGroup, untainted: AllocSet) -> tuple[AllocSet, AllocSet, AllocSet]:
        assert self.job is not None
        ignore: AllocSet = {}
        inplace: AllocSet = {}
        destructive: AllocSet = {}
        for a in untainted.values():
            ign, destr, updated = self.update_fn(a, self.job, tg)
            if ign:
                ignore[a.id] = a
            elif destr:
                destructive[a.id] = a
            else:
                inplace[a.id] = a
                if updated is not None:
                    self.result.inplace.append(updated)
        return ignore, inplace, destructive

    def _under_provisioned_by(
        self, tg: TaskGroup, untainted: AllocSet, destructive: AllocSet, migrate: AllocSet, is_canarying: bool
    ) -> int:
        if tg.update is None or not tg.update.rolling() or not (destructive or migrate):
            return tg.count
        if self.deployment is None:
            return tg.update.max_parallel
        if self.deployment_paused or self.deployment_failed or is_canarying:
            return 0
        under = tg.update.max_parallel
        for a in untainted.values():
            if a.deployment_id != self.deployment.id:
                continue
            ds = a.deployment_status
            if ds is not None and ds.is_unhealthy():
                return 0
            if ds is None or not ds.is_healthy():
                under -= 1
        return max(under, 0)

    def _compute_placements(
        self,
        tg: TaskGroup,
        name_index: AllocNameIndex,
        untainted: AllocSet,
        migrate: AllocSet,
        reschedule: AllocSet,
        lost: AllocSet,
        is_canarying: bool,
    ) -> list[PlaceRequest]:
        place = [
            PlaceRequest(
                name=a.name,
                task_group=tg,
                previous=a,
                reschedule=True,
                canary=a.is_canary(),
                downgrade_non_canary=is_canarying and not a.is_canary(),
            )
            for a in _name_order(reschedule)
        ]
        existing = len(untainted) + len(migrate) + len(reschedule)
        for a in _name_order(lost):
            if existing >= tg.count:
                break
            # A lost alloc that was already replaced (disconnect.replace) needs no second one.
            if a.next_allocation:
                continue
            existing += 1
            place.append(
                PlaceRequest(
                    name=a.name,
                    task_group=tg,
                    previous=a,
                    lost=True,
                    canary=a.is_canary(),
                    downgrade_non_canary=is_canarying and not a.is_canary(),
                )
            )
        if existing < tg.count:
            for name in name_index.next(tg.count - existing):
                place.append(PlaceRequest(name=name, task_group=tg, downgrade_non_canary=is_canarying))
        return place

    def _compute_replacements(
        self,
        place_ready: bool,
        desired: DesiredUpdates,
        place: list[PlaceRequest],
        reschedule_now: AllocSet,
        lost: AllocSet,
        under: int,
    ) -> int:
        failed = {
            k: a
            for k, a in reschedule_now.items()
            if k not in self.result.disconnect_updates and a.client_status != ALLOC_CLIENT_UNKNOWN
        }
        if place_ready:
            desired.place += len(place)
            desired.reschedule_now += sum(1 for p in place if p.reschedule)
            self.result.place.extend(place)
            # The failed alloc is stopped together with its replacement's placement, so a
            # replacement that finds no node leaves it (and its reschedule history) in place.
            for p in place:
                if p.previous is not None and p.previous.id in failed:
                    p.stop_previous = ALLOC_RESCHEDULED
            desired.stop += len(failed)
            return under - min(len(place), under)
        # Not place-ready (paused/failed deployment, canarying): lost allocs and failures are
        # still replaced, so the job does not silently shrink.
        if lost:
            allowed = min(len(lost), len(place))
            lost_places = [p for p in place if p.lost][:allowed]
            desired.place += len(lost_places)
            self.result.place.extend(lost_places)
        if not reschedule_now or not place:
            return under
        for p in place:
            prev = p.previous
            part_of_failed = (
                self.deployment_failed
                and prev is not None
                and self.deployment is not None
                and prev.deployment_id == self.deployment.id
            )
            if not part_of_failed and p.reschedule and prev is not None:
                self.result.place.append(p)
                desired.place += 1
                desired.reschedule_now += 1
                if prev.id in self.result.disconnect_updates:
                    continue
                p.stop_previous = ALLOC_RESCHEDULED
                desired.stop += 1
        return under

    def _create_deployment(
        self, tg: TaskGroup, existing: bool, dstate: DeploymentState, group: AllocSet, destructive: AllocSet
    ) -> None:
        assert self.job is not None
        if existing or tg.update is None or not tg.update.rolling() or dstate.desired_total == 0:
            return
        updating_spec = bool(destructive) or bool(self.result.inplace)
        had_running = any(a.job_version == self.job.version for a in group.values())
        if had_running and not updating_spec:
            return
        if self.deployment is None:
            self.deployment = Deployment(
                id=self.new_id(),
                namespace=self.namespace,
                job_id=self.job_id,
                job_version=self.job.version,
                job_modify_index=self.job.modify_index,
                job_spec_modify_index=self.job.job_modify_index,
                job_create_index=self.job.create_index,
                eval_priority=self.eval_priority,
                create_time=self.now,
                modify_time=self.now,
            )
            self.result.deployment = self.deployment
        self.deployment.task_groups[tg.name] = dstate
        if self.result.deployment is None and self.deployment is not None:
            self.result.deployment = self.deployment


def _started(a: Allocation) -> int:
    starts = [ts.started_at for ts in a.task_states.values() if ts.started_at]
    return min(starts) if starts else 0


# uuid.UUID(int=n, version=4) clears these bits and sets the version and RFC 4122 variant.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (4 << 76) | (0x8000 << 48)


def new_uuid_fn(seed: int) -> IdFn:
    """A deterministic UUID generator seeded from the eval. It gives exactly what
    `str(uuid.UUID(int=rng.getrandbits(128), version=4))` gives, formatted directly: a plan
    of 1,000 placements draws 1,000 IDs, and building UUID objects was a tenth of its time."""
    import random

    bits = random.Random(seed).getrandbits

    def gen() -> str:
        h = f"{(bits(128) & _UUID4_CLEAR) | _UUID4_SET:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    return gen


__all__ = [
    "ALLOC_IN_PLACE",
    "ALLOC_LOST",
    "ALLOC_MIGRATING",
    "ALLOC_NOT_NEEDED",
    "ALLOC_RECONNECTED",
    "ALLOC_RESCHEDULED",
    "ALLOC_UNKNOWN",
    "ALLOC_UPDATING",
    "DestructiveRequest",
    "PlaceRequest",
    "ReconcileResults",
    "Reconciler",
    "StopRequest",
    "new_uuid_fn",
]
