"""The reconciler for service and batch jobs (Nomad's cluster reconciler): compare the job's
desired state with its allocs and decide, per task group, what to place, stop, update in place
or destructively, canary, migrate, reschedule now or later, disconnect and reconnect.

Pure: it reads the job (and the job versions allocs were placed with), the allocs, the tainted
nodes, the latest deployment and the time it is given, and returns a `ReconcileResults`.
"""

from __future__ import annotations

from drover.model import Allocation, TaskGroup
from drover.model.alloc import ALLOC_CLIENT_LOST, ALLOC_CLIENT_UNKNOWN
from drover.scheduler.names import AllocNameIndex
from drover.scheduler.plan import DesiredUpdates
from drover.scheduler.reconciler.allocs import (
    AllocSet,
    diff,
    filter_by_rescheduleable,
    filter_by_tainted,
    name_order,
    old_terminal,
    union,
)
from drover.scheduler.reconciler.deployments import Deployments
from drover.scheduler.reconciler.disconnect import (
    delay_by_stop_after,
    disconnect_timeout_evals,
    reconcile_reconnecting,
)
from drover.scheduler.reconciler.followups import lost_later_evals, reschedule_later_evals
from drover.scheduler.reconciler.groupstate import GroupState
from drover.scheduler.reconciler.inputs import ClusterState, EvalContext, JobState, UpdateFn
from drover.scheduler.reconciler.results import (
    ALLOC_LOST,
    ALLOC_MIGRATING,
    ALLOC_NOT_NEEDED,
    ALLOC_RESCHEDULED,
    DestructiveRequest,
    PlaceRequest,
    ReconcileResults,
    StopRequest,
)


class Reconciler:
    """One reconciliation of one job. Build it, call `compute()`."""

    def __init__(self, job: JobState, cluster: ClusterState, ctx: EvalContext, update_fn: UpdateFn) -> None:
        self.job = job
        self.cluster = cluster
        self.ctx = ctx
        self.update_fn = update_fn
        self.deployments = Deployments(job.deployment)
        self.results = ReconcileResults()

    def compute(self) -> ReconcileResults:
        by_group: dict[str, AllocSet] = {}
        for a in self.cluster.allocs:
            by_group.setdefault(a.task_group, {})[a.id] = a
        job = self.job.job
        self.deployments.cancel_unneeded(job, self.results)
        if job is None or job.stopped():
            for tg_name, allocs in by_group.items():
                self._stop_group(tg_name, allocs)
            return self.results
        group_names = {tg.name for tg in job.task_groups}
        for tg_name, allocs in by_group.items():
            if tg_name not in group_names:
                self._stop_group(tg_name, allocs)
        complete = True
        for tg in job.task_groups:
            complete = self._compute_group(tg, by_group.get(tg.name, {})) and complete
        self.deployments.finish(complete, self.results)
        return self.results

    def _stop_group(self, tg_name: str, allocs: AllocSet) -> None:
        """Stop a group the job no longer has (or every group of a stopped job)."""
        live = [a for a in allocs.values() if not a.terminal_status()]
        self.results.stop_all(live, ALLOC_NOT_NEEDED)
        self.results.desired(tg_name).stop += len(live)

    # --- per task group ---
    def _compute_group(self, tg: TaskGroup, allocs: AllocSet) -> bool:
        """Reconcile one task group; whether it is complete (nothing left to do for it)."""
        desired = self.results.desired(tg.name)
        if tg.count == 0:
            # Scaled to zero: everything the server still wants running stops, failed allocs
            # included, and nothing is rescheduled.
            live = [a for a in name_order(allocs) if not a.server_terminal()]
            self.results.stop_all(live, ALLOC_NOT_NEEDED)
            desired.stop += len(live)
            return True
        g = self._sort_group(tg, allocs, desired)
        taken = union(g.untainted, g.migrate, g.reschedule_now, g.lost)
        name_index = AllocNameIndex(self.job.job_id, tg.name, tg.count, taken.values())

        stop = self._compute_stop(g, name_index)
        desired.stop += len(stop)
        g.untainted = diff(g.untainted, stop)
        inplace, destructive = self._compute_updates(g)
        requires_canaries = self._compute_canaries(g, name_index, destructive)

        is_canarying = g.canarying()
        deployments = self.deployments
        under = deployments.under_provisioned_by(tg, g.untainted, destructive, g.migrate, is_canarying)
        place: list[PlaceRequest] = []
        if not g.lost_later:
            place = self._cap_at_count(g, self._compute_placements(g, name_index, is_canarying))
        place_ready = not deployments.paused and not deployments.failed and not is_canarying
        under = self._compute_replacements(g, place, place_ready, under)
        self._compute_destructive(g, destructive, place_ready, under)
        self._compute_migrations(g, is_canarying)

        if not g.existing_deployment:
            updating_spec = bool(destructive) or bool(self.results.inplace)
            deployments.create_for_group(
                tg, g.dstate, g.allocs, updating_spec, self.job, self.ctx, self.results
            )
        complete = not (
            destructive
            or inplace
            or place
            or g.migrate
            or g.reschedule_now
            or g.reschedule_later
            or requires_canaries
        )
        return complete and deployments.group_complete(tg)

    def _sort_group(self, tg: TaskGroup, allocs: AllocSet, desired: DesiredUpdates) -> GroupState:
        """Sort the group's allocs into buckets (see `allocs`), handling the disconnected and
        reconnected ones and creating the follow-up evals for later reschedules."""
        job, ctx = self.job, self.ctx
        dstate, existing = self.deployments.group_state(tg)
        if job.batch:
            assert job.job is not None
            # Finished allocs of an older version of a batch job are history: the new version
            # runs again in full (Nomad's filterOldTerminalAllocs).
            old = old_terminal(allocs, job.job.version)
            desired.ignore += len(old)
            allocs = diff(allocs, old)

        canaries, allocs = self._cancel_unneeded_canaries(allocs, desired)
        split = filter_by_tainted(allocs, job, self.cluster, ctx.now)
        desired.ignore += len(split.ignore)
        current = self.deployments.current
        resched = filter_by_rescheduleable(
            split.untainted,
            disconnecting=False,
            job=job,
            deployment=current,
            eval_id=ctx.eval_id,
            now=ctx.now,
        )
        g = GroupState(
            tg=tg,
            desired=desired,
            dstate=dstate,
            existing_deployment=existing,
            allocs=allocs,
            canaries=canaries,
            untainted=resched.untainted,
            migrate=split.migrate,
            lost=split.lost,
            reschedule_now=resched.now,
            reschedule_later=resched.later,
        )
        if split.reconnecting:
            self._reconnect(g, split.reconnecting, split.disconnecting)
        if split.expiring:
            g.lost = union(g.lost, split.expiring)
        if split.disconnecting:
            self._disconnect(g, split.disconnecting)
        if g.lost:
            g.lost_later = delay_by_stop_after(g.lost, job, ctx.now)
            g.followups.update(lost_later_evals(g.lost_later, job, ctx, self.results))
        reschedule_later_evals(g.reschedule_later, job, ctx, self.results)
        desired.reschedule_later += len(g.reschedule_later)
        return g

    def _cancel_unneeded_canaries(
        self, allocs: AllocSet, desired: DesiredUpdates
    ) -> tuple[AllocSet, AllocSet]:
        """Stop canaries of an older or failed deployment; return (current canaries, rest)."""
        stop_ids = self.deployments.unneeded_canary_ids()
        stop_set = {i: allocs[i] for i in stop_ids if i in allocs and not allocs[i].terminal_status()}
        self.results.stop_all(stop_set.values(), ALLOC_NOT_NEEDED)
        desired.stop += len(stop_set)
        allocs = diff(allocs, {i: allocs[i] for i in stop_ids if i in allocs})

        canaries: AllocSet = {}
        if self.deployments.current is not None:
            canaries = {i: allocs[i] for i in self.deployments.canary_ids() if i in allocs}
            split = filter_by_tainted(canaries, self.job, self.cluster, self.ctx.now)
            # Transient: not counted in the desired changes (the deployment is still going).
            self.results.stop_all(split.migrate.values(), ALLOC_MIGRATING)
            self.results.stop_all(split.lost.values(), ALLOC_LOST, ALLOC_CLIENT_LOST)
            canaries = split.untainted
            allocs = diff(allocs, split.migrate, split.lost)
        return canaries, allocs

    def _reconnect(self, g: GroupState, reconnecting: AllocSet, disconnecting: AllocSet) -> None:
        """Keep or stop the reconnecting allocs and their replacements; the kept ones are
        untainted again, the stopped ones leave every bucket."""
        before = len(self.results.reconnect_updates)
        keep, stopped = reconcile_reconnecting(
            reconnecting, g.allocs, self.job, self.cluster, self.ctx.now, self.results
        )
        g.desired.reconnect += len(self.results.reconnect_updates) - before
        g.desired.stop += len(stopped)
        g.untainted = diff(union(g.untainted, keep), stopped)
        g.reschedule_now = diff(g.reschedule_now, stopped)
        g.migrate = diff(g.migrate, stopped)
        g.lost = diff(g.lost, stopped)
        for k in stopped:
            disconnecting.pop(k, None)

    def _disconnect(self, g: GroupState, disconnecting: AllocSet) -> None:
        """Mark the allocs of a node that just disconnected unknown; replace them now or later
        as their group's `disconnect` block says."""
        if g.tg.lost_after() > 0:
            resched = filter_by_rescheduleable(
                disconnecting,
                disconnecting=True,
                job=self.job,
                deployment=self.deployments.current,
                eval_id=self.ctx.eval_id,
                now=self.ctx.now,
            )
            g.reschedule_now = union(g.reschedule_now, resched.now)
            g.untainted = union(g.untainted, resched.untainted)
            g.reschedule_later.extend(resched.later)
        g.followups.update(disconnect_timeout_evals(disconnecting, self.job, self.ctx, self.results))
        g.desired.disconnect += len(disconnecting)

    def _compute_stop(self, g: GroupState, name_index: AllocNameIndex) -> AllocSet:
        """Stop the lost allocs, and whatever exceeds the group's count."""
        stop: AllocSet = dict(g.lost)
        for a in g.lost.values():
            self.results.stop.append(
                StopRequest(
                    alloc=a,
                    description=ALLOC_LOST,
                    client_status=ALLOC_CLIENT_LOST,
                    followup_eval_id=g.followups.get(a.id, ""),
                )
            )
        is_canarying = g.canarying()
        untainted = diff(g.untainted, g.canaries) if is_canarying else g.untainted
        known = [a for a in untainted.values() if a.client_status != ALLOC_CLIENT_UNKNOWN]
        remove = len(known) + len(g.migrate) - g.tg.count
        if remove > 0:
            untainted = {k: a for k, a in untainted.items() if not a.terminal_status()}
            self._stop_surplus(g, name_index, untainted, remove, stop, is_canarying)
        return stop

    def _stop_surplus(
        self,
        g: GroupState,
        name_index: AllocNameIndex,
        untainted: AllocSet,
        remove: int,
        stop: AllocSet,
        is_canarying: bool,
    ) -> None:
        """Stop `remove` allocs beyond the group's count (into `stop`), in Nomad's order of
        preference."""

        def take(a: Allocation) -> bool:
            nonlocal remove
            stop[a.id] = a
            self.results.stop.append(StopRequest(alloc=a, description=ALLOC_NOT_NEEDED))
            untainted.pop(a.id, None)
            remove -= 1
            return remove == 0

        # After promotion, the allocs the canaries replace (same names) go first.
        if not is_canarying and g.canaries:
            names = {c.name for c in g.canaries.values()}
            for a in name_order(diff(untainted, g.canaries)):
                if a.name in names and take(a):
                    return
        # Then allocs that would have to migrate anyway, highest index first.
        migrate = g.migrate
        if migrate:
            mig_index = AllocNameIndex(self.job.job_id, g.tg.name, g.tg.count, migrate.values())
            remove_names = mig_index.highest(remove)
            for a in name_order(migrate):
                if a.name in remove_names:
                    migrate.pop(a.id)
                    name_index.unset_index(a.index())
                    stop[a.id] = a
                    self.results.stop.append(StopRequest(alloc=a, description=ALLOC_NOT_NEEDED))
                    remove -= 1
                    if remove == 0:
                        return
        # Scale down: highest indexes first.
        remove_names = name_index.highest(remove)
        for a in sorted(untainted.values(), key=lambda x: (-x.index(), x.id)):
            if a.name in remove_names and take(a):
                return
        # Duplicate names can leave some over; stop any.
        for a in sorted(untainted.values(), key=lambda x: (-x.index(), x.id)):
            if take(a):
                return

    def _compute_updates(self, g: GroupState) -> tuple[AllocSet, AllocSet]:
        """Sort the untainted allocs into unchanged, in-place and destructive updates; returns
        (in-place, destructive)."""
        job = self.job.job
        assert job is not None
        tg = g.tg
        ignore: AllocSet = {}
        inplace: AllocSet = {}
        destructive: AllocSet = {}
        for a in g.untainted.values():
            ign, destr, updated = self.update_fn(a, job, tg)
            if ign:
                ignore[a.id] = a
            elif destr:
                destructive[a.id] = a
            else:
                inplace[a.id] = a
                if updated is not None:
                    self.results.inplace.append(updated)
        g.desired.ignore += len(ignore)
        g.desired.in_place_update += len(inplace)
        if not g.existing_deployment:
            g.dstate.desired_total += len(destructive) + len(inplace)
        return inplace, destructive

    def _compute_canaries(self, g: GroupState, name_index: AllocNameIndex, destructive: AllocSet) -> bool:
        """Place the canaries a destructive update asks for; whether the group requires
        canaries (the deployment then waits for their promotion)."""
        if g.canarying():
            g.untainted = diff(g.untainted, g.canaries)
        tg, dstate = g.tg, g.dstate
        update = tg.update
        if (
            update is None
            or not update.rolling()
            or not destructive
            or len(g.canaries) >= update.canary
            or dstate.promoted
        ):
            return False
        dstate.desired_canaries = update.canary
        if not self.deployments.paused and not self.deployments.failed:
            n = update.canary - len(g.canaries)
            g.desired.canary += n
            for name in name_index.next_canaries(n, g.canaries.values(), destructive.values()):
                self.results.place.append(PlaceRequest(name=name, task_group=tg, canary=True))
        return True

    def _compute_placements(
        self, g: GroupState, name_index: AllocNameIndex, is_canarying: bool
    ) -> list[PlaceRequest]:
        """Replacements of the allocs to reschedule now and of lost allocs, then new allocs up
        to the group's count."""
        tg = g.tg
        place = [
            PlaceRequest(
                name=a.name,
                task_group=tg,
                previous=a,
                reschedule=True,
                canary=a.is_canary(),
                downgrade_non_canary=is_canarying and not a.is_canary(),
            )
            for a in name_order(g.reschedule_now)
        ]
        existing = len(g.untainted) + len(g.migrate) + len(g.reschedule_now)
        for a in name_order(g.lost):
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

    def _cap_at_count(self, g: GroupState, place: list[PlaceRequest]) -> list[PlaceRequest]:
        """Reschedules alone can exceed a count just lowered: place no more than the count and
        let the surplus failed allocs go."""
        if len(place) > g.tg.count:
            surplus = place[g.tg.count :]
            place = place[: g.tg.count]
            for p in surplus:
                if p.previous is not None and not p.previous.server_terminal():
                    self.results.stop.append(StopRequest(alloc=p.previous, description=ALLOC_NOT_NEEDED))
                    g.desired.stop += 1
                    g.reschedule_now.pop(p.previous.id, None)
        if not g.existing_deployment:
            g.dstate.desired_total += len(place)
        return place

    def _compute_replacements(
        self, g: GroupState, place: list[PlaceRequest], place_ready: bool, under: int
    ) -> int:
        """Hand the placements over (only those for lost and failed allocs while the deployment
        does not progress); returns what is left of `under` for destructive updates."""
        desired, results = g.desired, self.results
        failed = {
            k: a
            for k, a in g.reschedule_now.items()
            if k not in results.disconnect_updates and a.client_status != ALLOC_CLIENT_UNKNOWN
        }
        if place_ready:
            desired.place += len(place)
            desired.reschedule_now += sum(1 for p in place if p.reschedule)
            results.place.extend(place)
            # The failed alloc is stopped together with its replacement's placement, so a
            # replacement that finds no node leaves it (and its reschedule history) in place.
            for p in place:
                if p.previous is not None and p.previous.id in failed:
                    p.stop_previous = ALLOC_RESCHEDULED
            desired.stop += len(failed)
            return under - min(len(place), under)
        # Not place-ready (paused/failed deployment, canarying): lost allocs and failures are
        # still replaced, so the job does not silently shrink.
        if g.lost:
            allowed = min(len(g.lost), len(place))
            lost_places = [p for p in place if p.lost][:allowed]
            desired.place += len(lost_places)
            results.place.extend(lost_places)
        if not g.reschedule_now or not place:
            return under
        current = self.deployments.current
        failed_deployment = self.deployments.failed
        for p in place:
            prev = p.previous
            part_of_failed = (
                failed_deployment
                and prev is not None
                and current is not None
                and prev.deployment_id == current.id
            )
            if not part_of_failed and p.reschedule and prev is not None:
                results.place.append(p)
                desired.place += 1
                desired.reschedule_now += 1
                if prev.id in results.disconnect_updates:
                    continue
                p.stop_previous = ALLOC_RESCHEDULED
                desired.stop += 1
        return under

    def _compute_destructive(
        self, g: GroupState, destructive: AllocSet, place_ready: bool, under: int
    ) -> None:
        """Replace as many destructively updated allocs as the rolling update allows now."""
        if not place_ready:
            g.desired.ignore += len(destructive)
            return
        n = min(len(destructive), under)
        g.desired.destructive_update += n
        g.desired.ignore += len(destructive) - n
        for a in name_order(destructive)[:n]:
            self.results.destructive.append(DestructiveRequest(name=a.name, task_group=g.tg, stop=a))

    def _compute_migrations(self, g: GroupState, is_canarying: bool) -> None:
        """Stop each alloc to migrate and place one of the same name elsewhere."""
        g.desired.migrate += len(g.migrate)
        for a in name_order(g.migrate):
            self.results.stop.append(StopRequest(alloc=a, description=ALLOC_MIGRATING))
            self.results.place.append(
                PlaceRequest(
                    name=a.name,
                    task_group=g.tg,
                    previous=a,
                    canary=a.is_canary(),
                    downgrade_non_canary=is_canarying and not a.is_canary(),
                )
            )
