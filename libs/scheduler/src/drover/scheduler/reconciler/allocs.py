"""Alloc sets and the filters that sort a task group's allocs into buckets.

An alloc set maps alloc ID to alloc. The reconciler sorts each task group's allocs in two
passes. By the health of the alloc's node (`filter_by_tainted`), each alloc in one bucket:

1. **untainted**: its node is fine (not tainted, or draining while the alloc is not yet marked
   to migrate), or the alloc is terminal anyway; also an alloc already unknown on a
   disconnected node while it may still reconnect (even if reported running meanwhile).
2. **migrate**: the alloc is marked to migrate (its node is draining): it is stopped and an
   alloc of the same name is placed elsewhere.
3. **lost**: its node is down or gone; or its node disconnected and the group does not
   tolerate disconnects (no `disconnect.lost_after`) or the alloc had not started; or its node
   came back after `lost_after` ran out. Stopped with client status lost, and replaced.
4. **disconnecting**: running on a node that has just disconnected, in a group that tolerates
   disconnects: marked unknown, with a follow-up eval for when `lost_after` runs out.
5. **reconnecting**: unknown (or failed while disconnected) and its node is back in time: the
   reconciler keeps either it or its replacement, as `disconnect.reconcile` says.
6. **ignore**: failed while disconnected and already told to stop: nothing more to do.
7. **expiring**: still unknown after `lost_after`: treated as lost.

Then the untainted (and, on their own, the disconnecting) by their need to be rescheduled
(`filter_by_rescheduleable`):

8. **reschedule now**: failed, and its reschedule policy allows a replacement that is due
   (within a second), or is due at the follow-up eval being processed; or marked for a forced
   reschedule. A disconnecting alloc is replaced at once when `disconnect.replace` is set.
   Not while the alloc's own deployment is active, unless it is marked to reschedule.
9. **reschedule later**: failed, its replacement due later: a follow-up eval is created for
   that time (failures due close together share one), and the alloc stays untainted meanwhile.
10. **untainted**: the rest: running allocs, failures not (or no longer) eligible, and for
    batch jobs allocs that finished successfully (done, never run again). Dropped: failed
    allocs already replaced, allocs the server stopped, and for service jobs allocs that
    completed or were lost (they are missing from the count, and new ones take their names).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model import Allocation, Deployment
from drover.model.alloc import (
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_PENDING,
    ALLOC_CLIENT_RUNNING,
    ALLOC_CLIENT_UNKNOWN,
    ALLOC_DESIRED_RUN,
    ALLOC_DESIRED_STOP,
)
from drover.model.node import NODE_STATUS_DISCONNECTED, NODE_STATUS_READY
from drover.scheduler.reconciler.inputs import ClusterState, JobState
from drover.scheduler.reschedule import RESCHEDULE_WINDOW, next_reschedule_time, next_reschedule_time_from

AllocSet = dict[str, Allocation]


def union(*sets: AllocSet) -> AllocSet:
    out: AllocSet = {}
    for s in sets:
        out.update(s)
    return out


def diff(a: AllocSet, *others: AllocSet) -> AllocSet:
    """The allocs of `a` in none of `others`."""
    return {k: v for k, v in a.items() if not any(k in o for o in others)}


def name_order(s: AllocSet) -> list[Allocation]:
    """By name index, then name and ID: the order the reconciler visits allocs in."""
    return sorted(s.values(), key=lambda a: (a.index(), a.name, a.id))


def old_terminal(s: AllocSet, job_version: int) -> AllocSet:
    """Terminal allocs of an older job version (for batch jobs: history, not part of the job)."""
    return {k: a for k, a in s.items() if a.terminal_status() and a.job_version < job_version}


def expired(alloc: Allocation, job: JobState, now: int) -> bool:
    """Whether `alloc` has been unknown for longer than its group's `disconnect.lost_after`."""
    if alloc.client_status != ALLOC_CLIENT_UNKNOWN:
        return False
    last = alloc.last_unknown()
    timeout = job.lost_after(alloc)
    if last == 0 or timeout == 0:
        return False
    return now >= last + timeout


@dataclass(slots=True)
class TaintedSplit:
    """A task group's allocs by the health of their nodes (buckets 1-7 above)."""

    untainted: AllocSet = field(default_factory=dict)
    migrate: AllocSet = field(default_factory=dict)
    lost: AllocSet = field(default_factory=dict)
    disconnecting: AllocSet = field(default_factory=dict)
    reconnecting: AllocSet = field(default_factory=dict)
    ignore: AllocSet = field(default_factory=dict)
    expiring: AllocSet = field(default_factory=dict)


def filter_by_tainted(allocs: AllocSet, job: JobState, cluster: ClusterState, now: int) -> TaintedSplit:
    """Sort `allocs` by the health of their nodes."""
    out = TaintedSplit()
    untainted, migrate, lost = out.untainted, out.migrate, out.lost
    tainted = cluster.tainted_nodes
    can_disconnect = cluster.supports_disconnected_clients
    for a in allocs.values():
        supports = can_disconnect and job.lost_after(a) > 0
        reconnect = is_expired = False
        if supports and a.client_status in (ALLOC_CLIENT_UNKNOWN, ALLOC_CLIENT_RUNNING, ALLOC_CLIENT_FAILED):
            reconnect = a.needs_to_reconnect()
            if reconnect:
                is_expired = expired(a, job, now)
        if (
            supports
            and reconnect
            and a.desired_status == ALLOC_DESIRED_RUN
            and a.client_status == ALLOC_CLIENT_FAILED
        ):
            out.reconnecting[a.id] = a
            continue
        node_tainted = a.node_id in tainted
        node = tainted.get(a.node_id)
        if node is not None:
            if node.status == NODE_STATUS_DISCONNECTED:
                if supports:
                    # One already marked unknown stays so, even should a report of it running
                    # slip in before its node's heartbeat: marked again, it would be replaced again.
                    if a.client_status == ALLOC_CLIENT_RUNNING and not reconnect:
                        out.disconnecting[a.id] = a
                        continue
                    if a.client_status == ALLOC_CLIENT_PENDING:
                        lost[a.id] = a
                        continue
                elif not a.terminal_status():
                    lost[a.id] = a
                    continue
            elif node.status == NODE_STATUS_READY and reconnect:
                (lost if is_expired else out.reconnecting)[a.id] = a
                continue
        if a.terminal_status() and not reconnect:
            untainted[a.id] = a
            continue
        if a.desired_transition.should_migrate():
            migrate[a.id] = a
            continue
        if supports and expired(a, job, now):
            out.expiring[a.id] = a
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
            out.ignore[a.id] = a
            continue
        if not node_tainted or (node is not None and node.status == NODE_STATUS_READY):
            if reconnect:
                (lost if is_expired else out.reconnecting)[a.id] = a
                continue
            untainted[a.id] = a
            continue
        if node is None or node.terminal_status():
            lost[a.id] = a
            continue
        untainted[a.id] = a
    return out


@dataclass(slots=True)
class RescheduleSplit:
    """Allocs by their need to be rescheduled (buckets 8-10 above); `later` pairs each alloc
    with the time its replacement is due."""

    untainted: AllocSet = field(default_factory=dict)
    now: AllocSet = field(default_factory=dict)
    later: list[tuple[Allocation, int]] = field(default_factory=list)


def filter_by_rescheduleable(
    allocs: AllocSet,
    *,
    disconnecting: bool,
    job: JobState,
    deployment: Deployment | None,
    eval_id: str,
    now: int,
) -> RescheduleSplit:
    """Sort `allocs` (the untainted, or with `disconnecting` the disconnecting) by their need to
    be rescheduled, given the job's current deployment and the eval being processed."""
    out = RescheduleSplit()
    for a in allocs.values():
        if disconnecting and a.client_status == ALLOC_CLIENT_UNKNOWN:
            continue
        # A failed alloc that already has a replacement is done with.
        if a.next_allocation and a.terminal_status():
            continue
        is_untainted, ignore = _should_filter(a, job.batch)
        if is_untainted and not disconnecting:
            out.untainted[a.id] = a
        if ignore:
            continue
        now_ok, later_ok, when = _update_by_rescheduleable(a, disconnecting, job, deployment, eval_id, now)
        if now_ok:
            out.now[a.id] = a
            continue
        out.untainted[a.id] = a
        if later_ok:
            out.later.append((a, when))
    return out


def _should_filter(a: Allocation, batch: bool) -> tuple[bool, bool]:
    """(untainted, ignore) for an alloc before its reschedule policy is looked at."""
    if batch:
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


def _update_by_rescheduleable(
    a: Allocation, disconnecting: bool, job: JobState, deployment: Deployment | None, eval_id: str, now: int
) -> tuple[bool, bool, int]:
    """(reschedule now, reschedule later, when) for one alloc."""
    d = deployment
    # Not during an active deployment the alloc belongs to, unless marked for it (Nomad's
    # rescheduling during deployments).
    if (
        d is not None
        and a.deployment_id == d.id
        and d.active()
        and not a.desired_transition.should_reschedule()
    ):
        return False, False, 0
    now_ok = a.desired_transition.should_force_reschedule()
    policy = job.reschedule_policy_of(a)
    if disconnecting:
        # With a disconnect block, a disconnected alloc is replaced at once when
        # disconnect.replace is set (Nomad's RescheduleTimeOnDisconnect), whatever the
        # reschedule policy says.
        tg = job.group_of(a)
        if tg is None or tg.disconnect is None:
            return now_ok, False, 0
        when, eligible = now, tg.disconnect.replace
    elif a.client_status == ALLOC_CLIENT_UNKNOWN and a.followup_eval_id == eval_id:
        when, eligible = next_reschedule_time_from(a, policy, a.last_unknown()) if policy else (0, False)
    else:
        when, eligible = next_reschedule_time(a, policy)
    if eligible and (a.followup_eval_id == eval_id or when - now <= RESCHEDULE_WINDOW):
        return True, False, when
    later = eligible and not a.followup_eval_id
    return now_ok, later, when
