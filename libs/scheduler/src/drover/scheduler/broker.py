"""The eval broker's queueing rules, as a pure state machine (time is passed in).

- At most one eval per job is in flight; others for the job wait as pending. When the in-flight
  one finishes, the best pending eval (highest priority, then newest) goes next and the rest are
  canceled ("canceled after more recent eval was processed").
- Across jobs, higher priority first; within a priority, the earliest "virtual arrival" first:
  when the eval arrived plus COST_WEIGHT per placement its job asks for. A small job that
  arrives while large ones wait goes ahead of them, and a large one is passed over for at most
  its own size x COST_WEIGHT, so nothing starves (Nomad is plain FIFO here: a count-10 job
  waits behind every large job queued before it).
- With a dispatch window (the number of workers), at most that many evals are handed out at
  once, so the order above still applies to everything not yet started; at most `large` of
  them are large ones (with two or more workers at least one slot is kept for small evals), so
  a small job never waits for a large one to finish scheduling. Large evals in flight at once
  compete for the same nodes (binpacking fills the fullest first): the later plans lose nodes
  to the earlier and are scheduled again, and the extra work saturates a small machine.
- With lanes (`worker_lanes`: three workers or more), large evals go to workers of the large
  lane and small ones to the small lane, so the large lane's workers can run at a lower CPU
  priority; either lane takes the other's work when it has none of its own. At a large-lane
  depth of 2 (`large_beside_small` below `large`), the extra large evals go out only while no
  small eval is out, and (`small_quiet`) none has been for a while: while small jobs keep
  coming, every one of them is scheduled and committed beside one large eval at most.
- Evals with WaitUntil in the future are held until then.
- Paused (the scheduler configuration's PauseEvalBroker), it hands out nothing and cancels
  nothing: evals keep queueing, and go out in the usual order once it is unpaused.
- Core evals (type `_core`) are left alone: the garbage collector runs them (drover.gc), Nomad's
  `_core` queue served by its leader.
- Blocked evals: one per job (a newer one cancels the older). They are released when capacity
  may have appeared - a node of a class they did not find ineligible becomes usable, or an alloc
  stops - including an unblock that happened after their snapshot but before they arrived.
  Blocked evals created for plan conflicts (max-plan-attempts) are also released every minute.

The broker service feeds it every eval it sees in the log, with its cost (`eval_cost`), and
every capacity signal (`unblocked_classes`), and publishes what `due()` returns.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from drover.model.brokerstate import PlanSummary
from drover.model.durations import MILLISECOND, MINUTE
from drover.model.evaluation import (
    EVAL_STATUS_BLOCKED,
    EVAL_STATUS_CANCELED,
    EVAL_STATUS_PENDING,
    EVAL_TYPE_CORE,
    TRIGGER_MAX_PLANS,
    Evaluation,
)
from drover.model.events import (
    AllocsClientUpdated,
    Event,
    NodeDrainUpdated,
    NodeEligibilityUpdated,
    NodeRegistered,
    NodeStatusUpdated,
    PlanApplied,
)
from drover.model.job import Job
from drover.model.node import Node
from drover.scheduler.lanes import LANE_LARGE, LANE_SMALL, is_large, large_window

CANCELED_NEWER_EVAL = "canceled after more recent eval was processed"
CANCELED_NEWER_BLOCKED = "canceled: a newer blocked eval replaced it"
MAX_PLAN_RELEASE = 1 * MINUTE
# How much later a placement makes an eval count as having arrived (ns per placement).
COST_WEIGHT = 50 * MILLISECOND

JobKey = tuple[str, str]


@dataclass
class BrokerOutcome:
    dispatch: list[Evaluation] = field(default_factory=list)
    cancel: list[Evaluation] = field(default_factory=list)


def _key(evaluation: Evaluation) -> JobKey:
    return (evaluation.namespace, evaluation.job_id)


# --- what the broker service reads of the cluster ---
def eval_cost(job: Job | None, live_allocs: int, nodes: int) -> int:
    """How many placements an eval's job asks for: what the broker orders work by. `live_allocs`:
    the job's allocs not terminal; `nodes`: the nodes in the cluster. A stopped or unknown job
    stops its live allocs; a system job places a group per node; any other job its count, or
    has its live allocs to update."""
    if job is None or job.stop:
        return max(1, live_allocs)
    if job.type in ("system", "sysbatch"):
        return max(1, nodes * len(job.task_groups))
    return max(1, live_allocs, sum(tg.count for tg in job.task_groups))


class AllocEnd(Protocol):
    """What `unblocked_classes` reads of an alloc."""

    @property
    def node_id(self) -> str: ...

    def terminal_status(self) -> bool: ...


class CapacityView(Protocol):
    """What `unblocked_classes` reads of the cluster (the broker's replica)."""

    def node(self, node_id: str) -> Node | None: ...

    def record(self, alloc_id: str) -> AllocEnd | None: ...


NODE_EVENTS = (NodeRegistered, NodeStatusUpdated, NodeEligibilityUpdated, NodeDrainUpdated)
_NOTHING: tuple[str, ...] = ()


def unblocked_classes(state: CapacityView, event: Event) -> Sequence[str]:
    """The computed classes of the nodes where `event` (applied to `state`) may have made
    capacity: a node that is now ready, eligible and not draining; a node where an alloc
    stopped (its client finished it, or a plan stopped or preempted it)."""
    if isinstance(event, NODE_EVENTS):
        node_id = event.node.id if isinstance(event, NodeRegistered) else event.node_id
        node = state.node(node_id)
        if node is not None and node.ready() and node.eligible() and not node.draining():
            return (node.computed_class,)
        return _NOTHING
    if isinstance(event, AllocsClientUpdated):
        ids = [u.id for u in event.updates]
    elif isinstance(event, (PlanApplied, PlanSummary)):  # the broker's replica decodes a summary
        ids = [a.id for a in (*event.stopped, *event.preempted)]
    else:
        return _NOTHING
    classes: list[str] = []
    for alloc_id in ids:
        rec = state.record(alloc_id)
        if rec is not None and rec.terminal_status():
            node = state.node(rec.node_id)
            if node is not None:
                classes.append(node.computed_class)
    return classes


_STATES = ("ready", "unacked", "blocked", "waiting")


class EvalBroker:
    def __init__(
        self,
        window: int | None = None,
        large: int | None = None,
        large_beside_small: int | None = None,
        small_quiet: int = 0,
    ) -> None:
        # At most `window` evals out at once (None: no limit), and at most `large` of them large
        # (None: all but one slot when there are three or more); see the module notes. While a
        # small eval is out, a large one is handed out only below `large_beside_small` (None:
        # `large`): the large lane's depth (drover.scheduler.lanes) is used while no small job
        # waits, its extra evals competing for the cores with what a small job waits for -
        # and only once no small eval has been out for `small_quiet` (ns): small jobs come one
        # after another, and an extra large eval handed out between two of them is still being
        # scheduled and committed when the next arrives.
        self.window = window
        self.large_window = large_window(window, large)
        self.large_beside_small: int | None = self.large_window
        if large_beside_small is not None and self.large_window is not None:
            self.large_beside_small = min(large_beside_small, self.large_window)
        self.small_quiet = small_quiet
        # When a small eval was last out (handed out or finished), and when the quiet after it
        # ends if a large eval is held back for it (a wake-up: `next_wakeup`).
        self.small_seen: int | None = None
        self.quiet_until: int | None = None
        self.cost: dict[str, int] = {}
        self.arrival: dict[str, int] = {}
        self.inflight: dict[JobKey, str] = {}
        self.pending: dict[JobKey, dict[str, Evaluation]] = {}
        self.delayed: list[tuple[int, str]] = []
        self.delayed_evals: dict[str, Evaluation] = {}
        self.blocked: dict[JobKey, Evaluation] = {}
        self.unblocked: dict[str, Evaluation] = {}
        self.last_unblock: dict[str, int] = {}
        self.last_unblock_any = 0
        self._cancel: list[Evaluation] = []
        # Set while the scheduler configuration pauses the broker (PauseEvalBroker).
        self.paused = False

    # --- what the log says ---
    def upsert(self, evaluation: Evaluation, now: int, cost: int = 1) -> None:
        """Take in an eval as the log now has it; `cost` is how many placements its job asks
        for (the service knows the job). Core evals are not the schedulers': the garbage
        collector runs them (drover.gc)."""
        if evaluation.type == EVAL_TYPE_CORE:
            return
        key = _key(evaluation)
        if self.inflight.get(key) == evaluation.id and evaluation.status != EVAL_STATUS_PENDING:
            # The in-flight eval finished (or was re-blocked): the job's slot is free.
            del self.inflight[key]
            if not self.is_large(evaluation.id):
                self.small_seen = max(now, self.small_seen or now)
        if evaluation.status in (EVAL_STATUS_PENDING, EVAL_STATUS_BLOCKED):
            self.cost[evaluation.id] = cost
            self.arrival.setdefault(evaluation.id, evaluation.create_time or now)
        else:
            self.cost.pop(evaluation.id, None)
            self.arrival.pop(evaluation.id, None)
        for bucket in self.pending.values():
            bucket.pop(evaluation.id, None)
        self.delayed_evals.pop(evaluation.id, None)
        if evaluation.status != EVAL_STATUS_BLOCKED:
            self.unblocked.pop(evaluation.id, None)
        if (
            self.blocked.get(key) is not None
            and self.blocked[key].id == evaluation.id
            and evaluation.status != EVAL_STATUS_BLOCKED
        ):
            del self.blocked[key]
        if evaluation.status == EVAL_STATUS_PENDING:
            if self.inflight.get(key) == evaluation.id:
                return
            if evaluation.wait_until > now:
                self.delayed_evals[evaluation.id] = evaluation
                heapq.heappush(self.delayed, (evaluation.wait_until, evaluation.id))
            else:
                self.pending.setdefault(key, {})[evaluation.id] = evaluation
        elif evaluation.status == EVAL_STATUS_BLOCKED:
            self._block(evaluation)

    def _block(self, evaluation: Evaluation) -> None:
        key = _key(evaluation)
        old = self.blocked.get(key)
        if old is not None and old.id != evaluation.id:
            newer, older = (
                (evaluation, old) if evaluation.create_index >= old.create_index else (old, evaluation)
            )
            self._cancel.append(
                older.model_copy(
                    update={"status": EVAL_STATUS_CANCELED, "status_description": CANCELED_NEWER_BLOCKED}
                )
            )
            self.unblocked.pop(older.id, None)
            evaluation = newer
        self.blocked[key] = evaluation
        # An unblock after the eval's snapshot, but before it got here, must not be missed.
        if self._missed_unblock(evaluation):
            self.unblocked[evaluation.id] = evaluation

    def _eligible(self, evaluation: Evaluation, node_class: str) -> bool:
        return evaluation.escaped_computed_class or evaluation.class_eligibility.get(node_class, True)

    def _missed_unblock(self, evaluation: Evaluation) -> bool:
        since = evaluation.snapshot_index or evaluation.create_index
        if evaluation.escaped_computed_class or not evaluation.class_eligibility:
            return self.last_unblock_any > since
        return any(idx > since and self._eligible(evaluation, cls) for cls, idx in self.last_unblock.items())

    def unblock(self, node_class: str, index: int) -> None:
        """Capacity may have appeared on nodes of `node_class` at log `index`."""
        self.last_unblock[node_class] = max(self.last_unblock.get(node_class, 0), index)
        self.last_unblock_any = max(self.last_unblock_any, index)
        for evaluation in self.blocked.values():
            if self._eligible(evaluation, node_class):
                self.unblocked[evaluation.id] = evaluation

    # --- what to do now ---
    def due(self, now: int) -> BrokerOutcome:
        if self.paused:
            return BrokerOutcome()
        while self.delayed and self.delayed[0][0] <= now:
            _, eid = heapq.heappop(self.delayed)
            evaluation = self.delayed_evals.pop(eid, None)
            if evaluation is not None:
                self.pending.setdefault(_key(evaluation), {})[evaluation.id] = evaluation
        for evaluation in self.blocked.values():
            if (
                evaluation.triggered_by == TRIGGER_MAX_PLANS
                and evaluation.modify_time + MAX_PLAN_RELEASE <= now
            ):
                self.unblocked[evaluation.id] = evaluation
        out = BrokerOutcome(cancel=self._cancel)
        self._cancel = []
        ready: list[Evaluation] = []
        for key in sorted(set(self.pending) | {_key(e) for e in self.unblocked.values()}):
            if key in self.inflight:
                continue
            candidates = list(self.pending.get(key, {}).values())
            blocked = [e for e in self.unblocked.values() if _key(e) == key]
            if candidates:
                # The best pending eval runs; the others would only redo its work.
                best = max(candidates, key=lambda e: (e.priority, e.create_index))
                for e in candidates:
                    if e.id != best.id:
                        out.cancel.append(
                            e.model_copy(
                                update={
                                    "status": EVAL_STATUS_CANCELED,
                                    "status_description": CANCELED_NEWER_EVAL,
                                }
                            )
                        )
                        self.cost.pop(e.id, None)
                        self.arrival.pop(e.id, None)
                self.pending[key] = {best.id: best}
                ready.append(best)
            elif blocked:
                ready.append(blocked[0])
        ready.sort(key=self._order)
        for evaluation in self._within_window(ready, now):
            key = _key(evaluation)
            self.pending.pop(key, None)
            self.unblocked.pop(evaluation.id, None)
            self.inflight[key] = evaluation.id
            out.dispatch.append(evaluation)
        return out

    def is_large(self, eval_id: str) -> bool:
        """Whether the eval counts as large (by the cost it was last given)."""
        return is_large(self.cost.get(eval_id, 1))

    def _order(self, evaluation: Evaluation) -> tuple[int, int, int]:
        virtual = self.arrival.get(evaluation.id, 0) + self.cost.get(evaluation.id, 1) * COST_WEIGHT
        return (-evaluation.priority, virtual, evaluation.create_index)

    def _within_window(self, ready: list[Evaluation], now: int) -> list[Evaluation]:
        self.quiet_until = None
        if self.window is None or self.large_window is None:
            return ready
        out: list[Evaluation] = []
        busy = len(self.inflight)
        large = sum(1 for eid in self.inflight.values() if self.is_large(eid))
        if busy > large:
            self.small_seen = now
        for evaluation in ready:
            if busy >= self.window:
                break
            big = self.is_large(evaluation.id)
            # No small eval out, nor for `small_quiet`: the large lane's whole depth; else
            # `large_beside_small`.
            quiet_from = (self.small_seen or 0) + self.small_quiet
            quiet = busy == large and (self.small_seen is None or now >= quiet_from)
            limit = self.large_window if quiet else self.large_beside_small
            if big and limit is not None and large >= limit:
                if busy == large and large < self.large_window:
                    self.quiet_until = quiet_from  # held back for the quiet alone
                continue
            out.append(evaluation)
            busy += 1
            large += big
            if not big:
                self.small_seen = now
        return out

    def depths(self) -> dict[tuple[str, str], int]:
        """The queue by (lane, state), with Nomad's broker states: `ready` (pending, or blocked
        and released), `unacked` (handed out), `blocked`, `waiting` (delayed until WaitUntil)."""
        out = {(lane, state): 0 for lane in (LANE_SMALL, LANE_LARGE) for state in _STATES}

        def add(eval_id: str, state: str) -> None:
            out[(LANE_LARGE if self.is_large(eval_id) else LANE_SMALL, state)] += 1

        for bucket in self.pending.values():
            for eval_id in bucket:
                add(eval_id, "ready")
        for eval_id in self.unblocked:
            add(eval_id, "ready")
        for eval_id in self.inflight.values():
            add(eval_id, "unacked")
        for evaluation in self.blocked.values():
            if evaluation.id not in self.unblocked:
                add(evaluation.id, "blocked")
        for eval_id in self.delayed_evals:
            add(eval_id, "waiting")
        return out

    def next_wakeup(self) -> int | None:
        """When the next delayed eval comes due, or the quiet after small evals ends while a
        large eval waits for it (Unix ns), if either."""
        times = [t for t in (self.delayed[0][0] if self.delayed else None, self.quiet_until) if t is not None]
        return min(times) if times else None
