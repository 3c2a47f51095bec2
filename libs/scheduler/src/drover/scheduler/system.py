"""The system and sysbatch scheduler: one alloc of every task group on every feasible node.

Allocs on nodes that are down or gone are lost; on draining nodes they stop (unless the drain
ignores system jobs); new and changed nodes get placements; job updates roll out at most
`update.max_parallel` per eval, with a rolling-update follow-up eval after `stagger` (the eval's
NextEval). A node that is feasible but full may preempt allocs of jobs at least 10 priority lower
(the plan applier gives the preempted jobs their evals), if the scheduler configuration lets the
job's type preempt (Nomad's default: system jobs, not sysbatch ones).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.model import Allocation, AllocMetric, Evaluation, Job, Node, TaskGroup
from drover.model.alloc import (
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_PENDING,
    ALLOC_DESIRED_RUN,
    ALLOC_DESIRED_STOP,
)
from drover.model.evaluation import EVAL_STATUS_PENDING, TRIGGER_ROLLING_UPDATE
from drover.model.job import Resources
from drover.scheduler.allocated import group_allocation, updated_in_place, with_ports
from drover.scheduler.feasible import FeasibilityChecker, ready_nodes_table
from drover.scheduler.names import alloc_name
from drover.scheduler.netindex import PortAsk, group_network
from drover.scheduler.nodetable import NodeTable
from drover.scheduler.outcome import eval_seed, finish_failed
from drover.scheduler.plan import DesiredUpdates, Plan, SchedulerResult
from drover.scheduler.preemption import choose_victims, evictable, free_on, mark_preempted_by, preempt
from drover.scheduler.reconciler import ALLOC_LOST, ALLOC_NOT_NEEDED, ALLOC_UPDATING, new_uuid_fn
from drover.scheduler.state import StateSnapshot
from drover.scheduler.update import tasks_updated

NODE_DRAINING = "alloc not needed as node is draining"


@dataclass
class _Pass:
    """What one pass shares across the job's task groups."""

    job: Job
    ready: list[Node]
    ready_ids: set[str]
    by_dc: dict[str, int]
    in_pool: int
    table: NodeTable
    checker: FeasibilityChecker
    # Destructive updates allowed per eval (None: all).
    limit: int | None
    updated: int = 0
    by_node_tg: dict[tuple[str, str], Allocation] = field(default_factory=dict)
    done_sysbatch: set[tuple[str, str]] = field(default_factory=set)


class SystemScheduler:
    """Nomad's system scheduler (`system` and `sysbatch`)."""

    def __init__(
        self,
        state: StateSnapshot,
        evaluation: Evaluation,
        now: int,
        *,
        preemption: bool | None = None,
        job_priority: Callable[[Allocation], int] | None = None,
    ) -> None:
        self.state = state
        self.eval = evaluation
        self.now = now
        seed = eval_seed(evaluation, state.index)
        self.new_id = new_uuid_fn(seed)
        self._port_rng = random.Random(seed)
        self._port_asks: dict[str, PortAsk | None] = {}  # by task group, read once per eval
        self.job: Job | None = state.job(evaluation.namespace, evaluation.job_id)
        self.sysbatch = (self.job.type if self.job else evaluation.type) == "sysbatch"
        # The scheduler configuration for the job's pool: whether it may preempt (unless told),
        # and whether memory_max is given.
        self.config = state.config_for_pool(self.job.node_pool if self.job else "default")
        self.preemption = (
            preemption
            if preemption is not None
            else self.config.preemption_config.enabled_for("sysbatch" if self.sysbatch else "system")
        )
        self.plan = Plan(
            eval_id=evaluation.id, priority=evaluation.priority, job=self.job, snapshot_index=state.index
        )
        self.failed: dict[str, AllocMetric] = {}
        self.queued: dict[str, int] = {}
        self.followups: list[Evaluation] = []
        self.next_eval = ""
        self._job_priority = job_priority or self._lookup_priority

    def _lookup_priority(self, a: Allocation) -> int:
        j = self.state.job(a.namespace, a.job_id)
        return j.priority if j is not None else 50

    def _desired(self, tg: str) -> DesiredUpdates:
        return self.plan.annotations.setdefault(tg, DesiredUpdates())

    def _stop(self, a: Allocation, desc: str, client_status: str = "") -> None:
        update: dict[str, object] = {"desired_status": ALLOC_DESIRED_STOP, "desired_description": desc}
        if client_status:
            update["client_status"] = client_status
        self.plan.append_stop(a.model_copy(update=update))
        self._desired(a.task_group).stop += 1

    def process(self) -> SchedulerResult:
        evaluation = self.eval
        allocs = [
            a
            for a in self.state.allocs_by_job(evaluation.namespace, evaluation.job_id)
            if not a.terminal_status()
        ]
        job = self.job
        if job is None or job.stopped():
            for a in allocs:
                self._stop(a, ALLOC_NOT_NEEDED)
            return self._finish()
        p = self._start_pass(job, allocs)
        for tg in job.task_groups:
            self._compute_group(p, tg)
        if p.limit is not None and p.updated >= p.limit and self._more_updates(job, p.by_node_tg):
            rolling = self._rolling_update_eval(job)
            self.followups.append(rolling)
            self.next_eval = rolling.id
        return self._finish()

    def _start_pass(self, job: Job, allocs: list[Allocation]) -> _Pass:
        """The ready nodes and their usage; the live allocs to keep, by node and task group,
        once those of groups the job no longer has and those on lost or draining nodes stop."""
        nodes = ready_nodes_table(self.state, job)
        ready = list(nodes.nodes)
        p = _Pass(
            job=job,
            ready=ready,
            ready_ids={n.id for n in ready},
            by_dc=dict(nodes.available),
            in_pool=nodes.in_pool,
            table=NodeTable(nodes, self.state),
            checker=FeasibilityChecker(job),
            limit=_rolling_limit(job),
        )
        if self.sysbatch:
            for a in self.state.allocs_by_job(self.eval.namespace, self.eval.job_id):
                if a.ran_successfully():
                    p.done_sysbatch.add((a.node_id, a.task_group))
        tg_names = {tg.name for tg in job.task_groups}
        for a in allocs:
            node = self.state.node(a.node_id)
            if a.task_group not in tg_names:
                self._stop(a, ALLOC_NOT_NEEDED)
            elif node is None or node.terminal_status():
                self._stop(a, ALLOC_LOST, ALLOC_CLIENT_LOST)
            elif node.draining() and not (
                node.drain_strategy is not None and node.drain_strategy.drain_spec.ignore_system_jobs
            ):
                self._stop(a, NODE_DRAINING)
            else:
                p.by_node_tg[(a.node_id, a.task_group)] = a
        stopping = {a.id for lst in self.plan.node_update.values() for a in lst}
        for a in allocs:
            if a.id in stopping:
                p.table.add_usage(a.node_id, a, -1)
        return p

    def _compute_group(self, p: _Pass, tg: TaskGroup) -> None:
        """One alloc of `tg` on every feasible node: keep, update in place, replace (within the
        rolling limit) or place; stop those on nodes no longer feasible."""
        job, table, by_node_tg = p.job, p.table, p.by_node_tg
        desired = self._desired(tg.name)
        feas = p.checker.check(tg, p.ready)
        feasible_ids = {n.id for n in feas.nodes}
        ready_ids = p.ready_ids
        # Allocs on nodes that are no longer feasible (constraints changed) stop.
        for (node_id, tg_name), a in list(by_node_tg.items()):
            if tg_name == tg.name and node_id in ready_ids and node_id not in feasible_ids:
                self._stop(a, ALLOC_NOT_NEEDED)
                table.add_usage(a.node_id, a, -1)
                del by_node_tg[(node_id, tg_name)]
        for node in feas.nodes:
            key = (node.id, tg.name)
            existing = by_node_tg.get(key)
            if existing is None:
                if key in p.done_sysbatch:
                    desired.ignore += 1
                else:
                    self._place(p, tg, node, counted=True)
                continue
            if existing.job_version == job.version:
                desired.ignore += 1
                continue
            old_job = self.state.job_version(job.namespace, job.id, existing.job_version)
            if old_job is not None and not tasks_updated(job, old_job, tg.name):
                self.plan.append_alloc(
                    existing.model_copy(
                        update={
                            "job_version": job.version,
                            "eval_id": self.eval.id,
                            "allocated_resources": updated_in_place(
                                tg, existing.allocated_resources, self.config.memory_oversubscription_enabled
                            ),
                        }
                    )
                )
                desired.in_place_update += 1
                continue
            if p.limit is not None and p.updated >= p.limit:
                desired.ignore += 1
                continue
            p.updated += 1
            desired.destructive_update += 1
            self._stop(existing, ALLOC_UPDATING)
            desired.stop -= 1  # a destructive update is counted as such, not as a stop
            table.add_usage(node.id, existing, -1)
            self._place(p, tg, node, counted=False, previous=existing)

    def _rolling_update_eval(self, job: Job) -> Evaluation:
        """The follow-up eval that continues a rolling update after `update.stagger`."""
        assert job.update is not None
        evaluation = self.eval
        return Evaluation(
            id=self.new_id(),
            namespace=evaluation.namespace,
            priority=evaluation.priority,
            type=evaluation.type,
            triggered_by=TRIGGER_ROLLING_UPDATE,
            job_id=evaluation.job_id,
            status=EVAL_STATUS_PENDING,
            wait=job.update.stagger,
            wait_until=self.now + job.update.stagger,
            previous_eval=evaluation.id,
            create_time=self.now,
            modify_time=self.now,
        )

    def _more_updates(self, job: Job, by_node_tg: dict[tuple[str, str], Allocation]) -> bool:
        placed_on = {a.id for lst in self.plan.node_update.values() for a in lst}
        return any(a.job_version != job.version and a.id not in placed_on for a in by_node_tg.values())

    def _place(
        self, p: _Pass, tg: TaskGroup, node: Node, counted: bool, previous: Allocation | None = None
    ) -> None:
        job, table = p.job, p.table
        row = table.row[node.id]
        ask = tg.combined_resources()
        if not _fits(table, row, ask.cpu, ask.memory_mb, ask.disk_mb) and not (
            self.preemption and self._preempt(table, row, job, node, ask)
        ):
            self._record_failure(table, tg, row, ask.cpu, ask.memory_mb, ask.disk_mb, p.by_dc, p.in_pool)
            if counted:
                # Asked for but not placed: Place counts it, QueuedAllocations holds it.
                self._desired(tg.name).place += 1
            return
        given = group_allocation(tg, self.config.memory_oversubscription_enabled)
        ports = self._port_ask(tg)
        if ports is not None:
            got = table.network_index(row).assign(ports, self._port_rng)
            if isinstance(got, str):
                self._record_failure(table, tg, row, 0, 0, 0, p.by_dc, p.in_pool, dim=f"network: {got}")
                if counted:
                    self._desired(tg.name).place += 1
                return
            given = with_ports(given, ports.network, *got)
        alloc = Allocation(
            id=self.new_id(),
            namespace=job.namespace,
            eval_id=self.eval.id,
            name=alloc_name(job.id, tg.name, 0),
            node_id=node.id,
            node_name=node.name,
            job_id=job.id,
            job_version=job.version,
            task_group=tg.name,
            resources=ask,
            allocated_resources=given,
            desired_status=ALLOC_DESIRED_RUN,
            client_status=ALLOC_CLIENT_PENDING,
            create_time=self.now,
            modify_time=self.now,
            previous_allocation=previous.id if previous is not None else "",
        )
        if self.plan.node_preemptions.get(node.id):
            alloc.preempted_allocations = mark_preempted_by(self.plan, node.id, alloc.id)
        self.plan.append_alloc(alloc)
        table.add_usage(node.id, alloc, 1)
        if counted:
            self._desired(tg.name).place += 1

    def _port_ask(self, tg: TaskGroup) -> PortAsk | None:
        """The group's ports as the node index reads them; None for a group without any."""
        if tg.name not in self._port_asks:
            net = group_network(tg.networks)
            self._port_asks[tg.name] = PortAsk.of(net) if net is not None and net.ports() else None
        return self._port_asks[tg.name]

    def _preempt(self, table: NodeTable, row: int, job: Job, node: Node, ask: Resources) -> bool:
        """Evict what preemption takes on the node for `ask` to fit (drover.scheduler.preemption);
        False when even that is not enough."""
        live = evictable(self.plan, self.state.allocs_by_node(node.id))
        victims = choose_victims(
            live, job, self._job_priority, free_on(table, row), (ask.cpu, ask.memory_mb, ask.disk_mb)
        )
        if victims is None:
            return False
        preempt(self.plan, table, victims)
        return True

    def _record_failure(
        self,
        table: NodeTable,
        tg: TaskGroup,
        row: int,
        cpu: int,
        mem: int,
        disk: int,
        by_dc: dict[str, int],
        in_pool: int,
        dim: str | None = None,
    ) -> None:
        self.queued[tg.name] = self.queued.get(tg.name, 0) + 1
        m = self.failed.get(tg.name)
        if m is None:
            m = self.failed[tg.name] = AllocMetric(nodes_available=dict(by_dc), nodes_in_pool=in_pool)
        else:
            m.coalesced_failures += 1
        m.nodes_evaluated += 1
        m.nodes_exhausted += 1
        dim = dim or (
            "cpu"
            if table.used_cpu[row] + cpu > table.cap_cpu[row]
            else "memory"
            if table.used_mem[row] + mem > table.cap_mem[row]
            else "disk"
        )
        m.dimension_exhausted[dim] = m.dimension_exhausted.get(dim, 0) + 1
        cls = table.nodes[row].node_class
        m.class_exhausted[cls] = m.class_exhausted.get(cls, 0) + 1

    def _finish(self) -> SchedulerResult:
        for allocs in self.plan.node_preemptions.values():
            for a in allocs:
                self._desired(a.task_group)  # make sure the group is present
        n_pre = sum(len(v) for v in self.plan.node_preemptions.values())
        if n_pre and self.job is not None and self.job.task_groups:
            self._desired(self.job.task_groups[0].name).preemptions += n_pre
        evaluation = self.eval.model_copy(
            update={
                "failed_tg_allocs": self.failed,
                "queued_allocations": dict(self.queued),
                "snapshot_index": self.state.index,
                "next_eval": self.next_eval or self.eval.next_eval,
            }
        )
        # The preempted jobs' evals are the plan applier's to create, for what it commits
        # (drover.scheduler.planapply.preemption_evals).
        return finish_failed(
            evaluation,
            self.plan,
            list(self.followups),
            failed=bool(self.failed),
            class_eligibility={},
            escaped=False,
            new_id=self.new_id,
            now=self.now,
        )


def _fits(table: NodeTable, row: int, cpu: int, mem: int, disk: int) -> bool:
    return bool(
        table.used_cpu[row] + cpu <= table.cap_cpu[row]
        and table.used_mem[row] + mem <= table.cap_mem[row]
        and table.used_disk[row] + disk <= table.cap_disk[row]
    )


def _rolling_limit(job: Job) -> int | None:
    """Destructive updates per eval for system jobs: update.max_parallel (None = all)."""
    if job.update is not None and job.update.rolling():
        return job.update.max_parallel
    for tg in job.task_groups:
        if tg.update is not None and tg.update.rolling():
            return tg.update.max_parallel
    return None
