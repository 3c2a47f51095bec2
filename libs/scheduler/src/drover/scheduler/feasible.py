"""Feasibility: which nodes may run a task group, before resources and ranking are considered.

Mirrors Nomad's feasibility stage: the candidate nodes (ready, in the job's datacenters and node
pool), then job constraints, task drivers and group/task constraints, with results cached per
computed node class so that a large cluster with few distinct kinds of node costs a dict lookup
per node. ``distinct_hosts``/``distinct_property`` depend on placements and are left to the
placement stage (see :func:`distinct_constraints`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

import numpy as np

from drover.model.alloc import AllocMetric
from drover.model.job import Constraint, Job, TaskGroup
from drover.model.network import NetworkResource
from drover.model.node import NODE_ELIGIBLE, NODE_STATUS_READY, Node, compute_class
from drover.model.nodepool import NODE_POOL_ALL  # Nomad's built-in pool that spans every pool
from drover.model.state import InMemoryState, StateSnapshot, has_flat_usage
from drover.model.volumes import VOLUME_TYPE_HOST
from drover.scheduler.constraints import DISTINCT_OPERANDS, is_escaped, matches
from drover.scheduler.netindex import group_network, network_feasibility
from drover.scheduler.rank import BoolArray, FloatArray, IntArray

__all__ = [
    "FILTER_MISSING_DRIVERS",
    "NODE_POOL_ALL",
    "FeasibilityChecker",
    "FeasibleSet",
    "ReadyNodes",
    "distinct_constraints",
    "node_in_job_pool",
    "ready_nodes_in_pool",
    "ready_nodes_table",
    "task_group_constraints",
    "task_group_drivers",
]

FILTER_MISSING_DRIVERS = "missing drivers"  # Nomad's FilterConstraintDrivers
FILTER_HOST_VOLUMES = "missing compatible host volumes"  # Nomad's FilterConstraintHostVolumes

# --------------------------------------------------------------------------------------------
# Candidate nodes
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _datacenter_pattern(pattern: str) -> re.Pattern[str]:
    # Only "*" (any run) and "?" (one character) are special; "[" and the rest are literal,
    # since datacenter names are free text.
    regex = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile(regex, re.DOTALL)


def _in_any_datacenter(datacenter: str, patterns: Sequence[str]) -> bool:
    return any(
        p == "*" or p == datacenter or _datacenter_pattern(p).fullmatch(datacenter) is not None
        for p in patterns
    )


def _any_pool(job_pool: str) -> bool:
    # Nomad treats an unset job pool like "all" when listing candidate nodes.
    return job_pool in (NODE_POOL_ALL, "")


def node_in_job_pool(node: Node, job: Job) -> bool:
    """Whether the node lies in the job's node pool and one of its datacenters, whatever its
    status (Nomad's IsInPool and IsInAnyDC: an alloc on a node outside them must move)."""
    in_pool = _any_pool(job.node_pool) or node.node_pool == job.node_pool
    return in_pool and _in_any_datacenter(node.datacenter, job.datacenters)


@dataclass(frozen=True)
class ReadyNodes:
    """The nodes a job may use (`ready_nodes_in_pool`), with what a node table needs of them:
    capacities (rows of cpu, memory, disk), each node's row, and where the state keeps each
    node's usage (`InMemoryState.usage_slots`; None for other states). Shared between evals:
    read only."""

    nodes: list[Node]
    available: dict[str, int]
    in_pool: int
    caps: FloatArray
    row: dict[str, int]
    usage_slots: IntArray | None
    class_rows: dict[str, IntArray]  # computed class -> rows of its nodes
    # What evals work out once per node set and keep (e.g. the rows with reserved ports).
    memo: dict[str, object] = field(default_factory=dict, compare=False)


def ready_nodes_table(state: StateSnapshot, job: Job) -> ReadyNodes:
    """`ReadyNodes` over the state's nodes, remembered in the state until a node changes (a
    state without `derived` computes them every time). Evals far outnumber node changes, and a
    scan of thousands of nodes is most of a small eval's time."""
    derived: dict[object, object] | None = getattr(state, "derived", None)
    key = ("ready_nodes", job.node_pool, tuple(job.datacenters))
    hit = derived.get(key) if derived is not None else None
    if isinstance(hit, ReadyNodes):
        return hit
    ready, available, in_pool = ready_nodes_in_pool(state.all_nodes(), job)
    caps = np.array([n.capacity() for n in ready], dtype=np.float64).reshape(-1, 3)
    slots = None
    if has_flat_usage(state):
        flat = cast(InMemoryState, state)  # or a view over one with the same slots
        slots = np.array(flat.usage_slots(n.id for n in ready), dtype=np.int64)
    by_class: dict[str, list[int]] = {}
    for i, n in enumerate(ready):
        by_class.setdefault(n.computed_class or compute_class(n), []).append(i)
    class_rows = {cls: np.array(rows, dtype=np.int64) for cls, rows in by_class.items()}
    row = {n.id: i for i, n in enumerate(ready)}
    out = ReadyNodes(ready, available, in_pool, caps, row, slots, class_rows)
    if derived is not None:
        derived[key] = out
    return out


def ready_nodes_in_pool(nodes: Iterable[Node], job: Job) -> tuple[list[Node], dict[str, int], int]:
    """The nodes the job may use, in input order, with Nomad's counts.

    Returns ``(ready, nodes_available, nodes_in_pool)``: the nodes that are ready, not draining,
    eligible, in the job's node pool and in one of its datacenters (glob patterns); the count of
    those per datacenter (Nomad's NodesAvailable); and how many nodes the pool holds whatever
    their status or datacenter (NodesInPool).
    """
    pool = job.node_pool
    any_pool = _any_pool(pool)
    datacenters = job.datacenters
    dc_ok: dict[str, bool] = {}  # a cluster has few datacenters: glob each one once
    ready: list[Node] = []
    available: dict[str, int] = {}
    in_pool = 0
    for node in nodes:
        if not any_pool and node.node_pool != pool:
            continue
        in_pool += 1
        # Node.ready()/eligible()/draining(), inlined: this runs over the whole cluster.
        if node.status != NODE_STATUS_READY or node.scheduling_eligibility != NODE_ELIGIBLE:
            continue
        if node.drain_strategy is not None:
            continue
        dc = node.datacenter
        ok = dc_ok.get(dc)
        if ok is None:
            ok = dc_ok[dc] = _in_any_datacenter(dc, datacenters)
        if ok:
            ready.append(node)
            available[dc] = available.get(dc, 0) + 1
    return ready, available, in_pool


# --------------------------------------------------------------------------------------------
# What a task group asks of a node
# --------------------------------------------------------------------------------------------


def task_group_drivers(tg: TaskGroup) -> set[str]:
    """The drivers the group's tasks need (tasks without a driver ask for none)."""
    return {t.driver for t in tg.tasks if t.driver}


def task_group_constraints(tg: TaskGroup) -> list[Constraint]:
    """The group's constraints followed by every task's, without the placement-dependent
    ``distinct_*`` ones."""
    out = [c for c in tg.constraints if c.operand not in DISTINCT_OPERANDS]
    for task in tg.tasks:
        out.extend(c for c in task.constraints if c.operand not in DISTINCT_OPERANDS)
    return out


def distinct_constraints(job: Job, tg: TaskGroup) -> list[Constraint]:
    """The job's and the group's ``distinct_hosts``/``distinct_property`` constraints."""
    return [c for c in (*job.constraints, *tg.constraints) if c.operand in DISTINCT_OPERANDS]


_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def _has_drivers(node: Node, drivers: Sequence[str]) -> bool:
    for name in drivers:
        info = node.drivers.get(name)
        if info is not None:
            if not (info.detected and info.healthy):
                return False
        # Nodes from before driver health was reported only carry "driver.<name>" = bool;
        # anything Go's ParseBool would not read as true (including junk) means absent.
        elif node.attributes.get("driver." + name) not in _GO_TRUE:
            return False
    return True


def _has_host_volumes(node: Node, wanted: tuple[tuple[str, bool], ...]) -> bool:
    """Nomad's HostVolumeChecker: each host volume exists on the node, and one the group
    mounts writable is not read-only there."""
    for source, read_only in wanted:
        have = node.host_volumes.get(source)
        if have is None or (have.read_only and not read_only):
            return False
    return True


# --------------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------------


@dataclass
class FeasibleSet:
    """The outcome of checking one task group against candidate nodes.

    ``constraint_filtered`` is keyed by the failing constraint's ``str()`` (e.g.
    ``"${attr.kernel.name} = linux"``) or ``"missing drivers"``; ``class_filtered`` by the node's
    NodeClass, counted only for nodes that have one (as Nomad does).
    ``class_eligibility`` maps the computed classes seen to whether they can run the group;
    ``escaped`` says some constraint named a unique attribute, so that map is incomplete.
    """

    nodes: list[Node] = field(default_factory=list)
    nodes_evaluated: int = 0
    nodes_filtered: int = 0
    class_filtered: dict[str, int] = field(default_factory=dict)
    constraint_filtered: dict[str, int] = field(default_factory=dict)
    class_eligibility: dict[str, bool] = field(default_factory=dict)
    escaped: bool = False
    mask: BoolArray | None = None  # by `check_rows`: which of the input nodes are feasible

    @property
    def metrics(self) -> AllocMetric:
        """The counts as a (new) AllocMetric."""
        return AllocMetric(
            nodes_evaluated=self.nodes_evaluated,
            nodes_filtered=self.nodes_filtered,
            class_filtered=dict(self.class_filtered),
            constraint_filtered=dict(self.constraint_filtered),
        )


# A cached verdict: None when feasible, else the reason (the metric key) it is not.
_Verdict = str | None
_UNKNOWN = "\x00unknown"  # a dict.get() default no reason can equal


@dataclass
class _GroupPlan:
    drivers: tuple[str, ...]
    constraints: list[tuple[Constraint, str]]
    escaped: bool
    network: NetworkResource | None = None
    host_volumes: tuple[tuple[str, bool], ...] = ()  # (source, read only) of each host volume
    verdicts: dict[str, _Verdict] = field(default_factory=dict)  # computed class -> verdict


class FeasibilityChecker:
    """Checks the task groups of one job (one version of it) against nodes.

    Verdicts are cached per computed node class, separately for the job-level constraints and
    for each group's drivers and constraints (Nomad's EvalEligibility); the cache lives as long
    as the checker, so a second group reuses the job-level verdicts. Constraints naming unique
    attributes ("escaped") are checked node by node instead. Groups are keyed by name.
    Nodes should carry their ComputedClass (``with_computed_class``): one without is hashed
    once per checker (about 10 us each), which would dominate a large cluster.
    Metrics count every node as if it had been checked, whether the verdict came from the cache
    or not (Nomad reports cache hits as "computed class ineligible"; naming the constraint is
    more useful and keeps the counts independent of the order of nodes).
    """

    def __init__(self, job: Job) -> None:
        self.job = job
        self._job_constraints = [(c, str(c)) for c in job.constraints if c.operand not in DISTINCT_OPERANDS]
        self._job_escaped = is_escaped(c for c, _ in self._job_constraints)
        self._job_verdicts: dict[str, _Verdict] = {}
        self._groups: dict[str, _GroupPlan] = {}
        # Computed classes of nodes that arrive without one; the node is kept alongside so
        # that its id() cannot be reused while the entry lives.
        self._classes: dict[int, tuple[Node, str]] = {}
        self.node_checks = 0  # full (uncached) evaluations, job and group level together

    # -- public ------------------------------------------------------------------------------

    def check(self, tg: TaskGroup, nodes: Sequence[Node]) -> FeasibleSet:
        """The nodes (input order kept) that pass the job's and the group's checks."""
        plan = self._plan(tg)
        escaped = self._job_escaped or plan.escaped
        verdict, class_of = self._verdict, self._class_of
        # Hot loop: when nothing escaped, a class's verdict for this call is one dict lookup.
        by_cls: dict[str, _Verdict] = {}
        by_cls_get = by_cls.get
        seen: set[str] = set()  # classes met on the escaped path
        feasible: list[Node] = []
        append = feasible.append
        by_class: dict[str, int] = {}
        by_reason: dict[str, int] = {}
        for node in nodes:
            cls = node.computed_class or class_of(node)
            if escaped:
                seen.add(cls)
                reason = verdict(plan, node, cls)
            else:
                reason = by_cls_get(cls, _UNKNOWN)
                if reason is _UNKNOWN:
                    reason = by_cls[cls] = verdict(plan, node, cls)
            if reason is None:
                append(node)
                continue
            by_reason[reason] = by_reason.get(reason, 0) + 1
            if node.node_class:
                by_class[node.node_class] = by_class.get(node.node_class, 0) + 1

        return self._outcome(tg, nodes, feasible, by_class, by_reason, seen.union(by_cls), escaped)

    def check_rows(
        self, tg: TaskGroup, nodes: Sequence[Node], class_rows: dict[str, IntArray]
    ) -> FeasibleSet:
        """`check`, with the nodes grouped by computed class (`ReadyNodes.class_rows`): unless a
        constraint escaped the class cache, one verdict per class decides all its rows at once,
        instead of a dict lookup per node. Also gives the feasible rows as a mask."""
        plan = self._plan(tg)
        if self._job_escaped or plan.escaped:
            feas = self.check(tg, nodes)
            ok = {id(n) for n in feas.nodes}
            feas.mask = np.fromiter((id(n) in ok for n in nodes), dtype=bool, count=len(nodes))
            return feas
        mask = np.zeros(len(nodes), dtype=bool)
        by_class: dict[str, int] = {}
        by_reason: dict[str, int] = {}
        for cls, rows in class_rows.items():
            node = nodes[int(rows[0])]
            reason = self._verdict(plan, node, cls)
            if reason is None:
                mask[rows] = True
                continue
            by_reason[reason] = by_reason.get(reason, 0) + len(rows)
            if node.node_class:  # part of the computed class: the same for all its nodes
                by_class[node.node_class] = by_class.get(node.node_class, 0) + len(rows)
        feasible = [nodes[i] for i in np.flatnonzero(mask).tolist()]
        outcome = self._outcome(tg, nodes, feasible, by_class, by_reason, set(class_rows), False)
        outcome.mask = mask
        return outcome

    def _outcome(
        self,
        tg: TaskGroup,
        nodes: Sequence[Node],
        feasible: list[Node],
        by_class: dict[str, int],
        by_reason: dict[str, int],
        classes: set[str],
        escaped: bool,
    ) -> FeasibleSet:
        return FeasibleSet(
            nodes=feasible,
            nodes_evaluated=len(nodes),
            nodes_filtered=len(nodes) - len(feasible),
            class_filtered=by_class,
            constraint_filtered=by_reason,
            class_eligibility=self._eligibility({tg.name}, classes),
            escaped=escaped,
        )

    def class_eligibility(self) -> dict[str, bool]:
        """Every computed class judged so far, over all groups checked (Nomad's GetClasses):
        eligible if some group can use it, ineligible if the job or every group rules it out.
        This is what a blocked evaluation records."""
        return self._eligibility(set(self._groups), None)

    def escaped(self) -> bool:
        """Whether the job or any group checked so far has escaped the class cache."""
        return self._job_escaped or any(p.escaped for p in self._groups.values())

    # -- internals ---------------------------------------------------------------------------

    def _plan(self, tg: TaskGroup) -> _GroupPlan:
        plan = self._groups.get(tg.name)
        if plan is None:
            constraints = task_group_constraints(tg)
            plan = _GroupPlan(
                drivers=tuple(sorted(task_group_drivers(tg))),
                constraints=[(c, str(c)) for c in constraints],
                escaped=is_escaped(constraints),
                network=group_network(tg.networks),
                host_volumes=tuple(
                    (v.source, v.read_only) for v in tg.volumes.values() if v.type == VOLUME_TYPE_HOST
                ),
            )
            self._groups[tg.name] = plan
        return plan

    def _class_of(self, node: Node) -> str:
        hit = self._classes.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        cls = compute_class(node)
        self._classes[id(node)] = (node, cls)
        return cls

    def _verdict(self, plan: _GroupPlan, node: Node, cls: str) -> _Verdict:
        # Job level first, then the group; each cached per class unless escaped.
        if self._job_escaped:
            reason = self._job_verdict(node)
        else:
            reason = self._job_verdicts.get(cls, _UNKNOWN)
            if reason is _UNKNOWN:
                reason = self._job_verdicts[cls] = self._job_verdict(node)
        if reason is not None:
            return reason
        if plan.escaped:
            return self._group_verdict(plan, node)
        reason = plan.verdicts.get(cls, _UNKNOWN)
        if reason is _UNKNOWN:
            reason = plan.verdicts[cls] = self._group_verdict(plan, node)
        return reason

    def _job_verdict(self, node: Node) -> _Verdict:
        self.node_checks += 1
        for c, key in self._job_constraints:
            if not matches(c, node):
                return key
        return None

    def _group_verdict(self, plan: _GroupPlan, node: Node) -> _Verdict:
        self.node_checks += 1
        if not _has_drivers(node, plan.drivers):
            return FILTER_MISSING_DRIVERS
        for c, key in plan.constraints:
            if not matches(c, node):
                return key
        if plan.network is not None:
            reason = network_feasibility(plan.network, node)
            if reason is not None:
                return reason
        if not _has_host_volumes(node, plan.host_volumes):
            return FILTER_HOST_VOLUMES
        return None

    def _eligibility(self, groups: set[str], classes: set[str] | None) -> dict[str, bool]:
        # Nomad's order: a group that can use a class wins over one that cannot; the job
        # level then fills in classes no group judged, and its ineligibility overrides all.
        out: dict[str, bool] = {}
        for name in groups:
            plan = self._groups.get(name)
            if plan is None or plan.escaped:
                continue
            for cls, verdict in plan.verdicts.items():
                if classes is not None and cls not in classes:
                    continue
                if verdict is None:
                    out[cls] = True
                else:
                    out.setdefault(cls, False)
        if not self._job_escaped:
            for cls, verdict in self._job_verdicts.items():
                if classes is not None and cls not in classes:
                    continue
                if verdict is None:
                    out.setdefault(cls, True)
                else:
                    out[cls] = False
        return out
