"""The service and batch scheduler: reconcile, then place what the reconciler asks for.

One call of `GenericScheduler.process()` is one pass over a snapshot; the worker submits the
plan and, on a partial commit, runs it again on a newer snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from drover.model import (
    Allocation,
    AllocDeploymentStatus,
    AllocMetric,
    Deployment,
    Evaluation,
    Job,
    Node,
    Resources,
    TaskGroup,
)
from drover.model.alloc import ALLOC_CLIENT_PENDING, ALLOC_DESIRED_RUN, ALLOC_DESIRED_STOP
from drover.model.allocated import AllocatedResources
from drover.model.base import copy_with
from drover.model.defaults import DEFAULT_NODE_POOL, default_reschedule_policy
from drover.model.node import NODE_STATUS_DISCONNECTED, NODE_STATUS_DOWN
from drover.scheduler.allocated import group_allocation, updated_in_place, with_ports
from drover.scheduler.feasible import FeasibilityChecker, node_in_job_pool, ready_nodes_table
from drover.scheduler.nodetable import NodeTable
from drover.scheduler.outcome import eval_seed, finish_failed
from drover.scheduler.plan import Plan, SchedulerResult
from drover.scheduler.preemption import claim_preempted, preempt_for_group
from drover.scheduler.reconciler import (
    ALLOC_IN_PLACE,
    ClusterState,
    EvalContext,
    JobState,
    PlaceRequest,
    Reconciler,
    new_uuid_fn,
)
from drover.scheduler.reschedule import new_reschedule_tracker
from drover.scheduler.stack import GroupStack, Selection, SelectOptions, score_meta
from drover.scheduler.state import StateSnapshot
from drover.scheduler.update import tasks_updated


def tainted_nodes(state: StateSnapshot, allocs: list[Allocation]) -> dict[str, Node | None]:
    """Nodes of the job's allocs that are gone, down, disconnected or draining."""
    out: dict[str, Node | None] = {}
    for a in allocs:
        if a.node_id in out or a.terminal_status():
            continue
        node = state.node(a.node_id)
        if node is None:
            out[a.node_id] = None
        elif (
            node.status in (NODE_STATUS_DOWN, NODE_STATUS_DISCONNECTED)
            or node.draining()
            or a.needs_to_reconnect()
        ):
            out[a.node_id] = node
    return out


class GenericScheduler:
    """Nomad's generic scheduler for `service` and `batch` jobs."""

    def __init__(
        self,
        state: StateSnapshot,
        evaluation: Evaluation,
        now: int,
        *,
        full_scan: bool = False,
        placement_scores: Mapping[str, float] | None = None,
    ) -> None:
        self.state = state
        self.eval = evaluation
        self.now = now
        self.full_scan = full_scan
        self.placement_scores = placement_scores or {}
        seed = eval_seed(evaluation, state.index)
        self.new_id = new_uuid_fn(seed)
        self.rng = np.random.default_rng(seed)
        self.job: Job | None = state.job(evaluation.namespace, evaluation.job_id)
        self.batch = (self.job.type if self.job else evaluation.type) == "batch"
        # The scheduler configuration for the job's pool: the fit algorithm, the node limit,
        # memory_max, and whether the job's type may preempt.
        self.config = state.config_for_pool(self.job.node_pool if self.job else DEFAULT_NODE_POOL)
        self.preemption = self.config.preemption_config.enabled_for("batch" if self.batch else "service")
        self.plan = Plan(
            eval_id=evaluation.id, priority=evaluation.priority, job=self.job, snapshot_index=state.index
        )
        self.failed: dict[str, AllocMetric] = {}
        self.queued: dict[str, int] = {}
        self.deployment: Deployment | None = None
        self._table: NodeTable | None = None
        self._order: np.ndarray | None = None
        self._stacks: dict[str, GroupStack] = {}
        self._checker: FeasibilityChecker | None = None
        self._ask: dict[str, Resources] = {}
        self._templates: dict[str, Allocation] = {}
        self._metric_template: AllocMetric | None = None
        self.nodes_available: dict[str, int] = {}
        self.nodes_in_pool = 0

    # --- node table (built lazily: stop-only evals never need it) ---
    def _ensure_table(self) -> NodeTable:
        if self._table is None:
            assert self.job is not None
            ready = ready_nodes_table(self.state, self.job)
            self.nodes_available, self.nodes_in_pool = dict(ready.available), ready.in_pool
            self._table = NodeTable(ready, self.state)
            self._order = self.rng.permutation(len(ready.nodes)).astype(np.int64)
            self._checker = FeasibilityChecker(self.job)
            for allocs in self.plan.node_update.values():
                for a in allocs:
                    self._discount(a)
        return self._table

    def _discount(self, a: Allocation) -> None:
        orig = self.state.alloc(a.id)
        if orig is not None and self._table is not None and self._counted(a):
            self._table.add_usage(a.node_id, orig, -1)

    def _stack(self, tg: TaskGroup) -> GroupStack:
        st = self._stacks.get(tg.name)
        if st is None:
            assert self.job is not None
            table = self._ensure_table()
            assert self._order is not None and self._checker is not None
            stopping = {a.id for allocs in self.plan.node_update.values() for a in allocs}
            live = [
                a for a in self.state.allocs_by_job(self.job.namespace, self.job.id) if a.id not in stopping
            ]
            live += [
                a for allocs in self.plan.node_allocation.values() for a in allocs if a.job_id == self.job.id
            ]
            st = GroupStack(
                table,
                self._order,
                self.job,
                tg,
                self._checker,
                _dedupe(live),
                self.batch,
                self.full_scan,
                self.config,
            )
            self._stacks[tg.name] = st
        return st

    def _append_stop(self, alloc: Allocation, desc: str, client_status: str = "", followup: str = "") -> None:
        update: dict[str, object] = {"desired_status": ALLOC_DESIRED_STOP, "desired_description": desc}
        if client_status:
            update["client_status"] = client_status
        if followup:
            update["followup_eval_id"] = followup
        stopped = alloc.model_copy(update=update)
        self.plan.append_stop(stopped)
        if self._table is not None and self._counted(alloc):
            self._discount(alloc)
            for st in self._stacks.values():
                st.stopped(alloc)

    def _counted(self, alloc: Allocation) -> bool:
        """Whether the alloc uses resources and counts for placement (a live alloc in state);
        stopping a failed alloc frees nothing."""
        orig = self.state.alloc(alloc.id)
        return orig is not None and not orig.terminal_status()

    def _pop_stop(self, alloc: Allocation) -> None:
        lst = self.plan.node_update.get(alloc.node_id, [])
        self.plan.node_update[alloc.node_id] = [a for a in lst if a.id != alloc.id]
        if not self.plan.node_update[alloc.node_id]:
            del self.plan.node_update[alloc.node_id]
        orig = self.state.alloc(alloc.id)
        if orig is not None and self._table is not None and self._counted(alloc):
            self._table.add_usage(alloc.node_id, orig, 1)
            for st in self._stacks.values():
                st.stopped(alloc, sign=1)

    # --- in-place update check, handed to the reconciler ---
    def _update_fn(
        self, existing: Allocation, job: Job, tg: TaskGroup
    ) -> tuple[bool, bool, Allocation | None]:
        if existing.job_version == job.version:
            return True, False, None
        old_job = self.state.job_version(job.namespace, job.id, existing.job_version)
        if old_job is None or tasks_updated(job, old_job, tg.name):
            return False, True, None
        if existing.terminal_status():
            return True, False, None
        node = self.state.node(existing.node_id)
        if node is None:
            return False, True, None
        # The alloc is on a node no longer in the job's datacenters or pool: it must move.
        if not node_in_job_pool(node, job):
            return False, True, None
        new_res = tg.combined_resources()
        table = self._ensure_table()
        row = table.row.get(node.id)
        if row is not None:
            # The alloc's own resources are discounted: only the difference must fit.
            r = existing.resources
            if (
                table.used_cpu[row] - r.cpu + new_res.cpu > table.cap_cpu[row]
                or table.used_mem[row] - r.memory_mb + new_res.memory_mb > table.cap_mem[row]
                or table.used_disk[row] - r.disk_mb + new_res.disk_mb > table.cap_disk[row]
            ):
                return False, True, None
            table.used_cpu[row] += new_res.cpu - r.cpu
            table.used_mem[row] += new_res.memory_mb - r.memory_mb
            table.used_disk[row] += new_res.disk_mb - r.disk_mb
        updated = existing.model_copy(
            update={
                "eval_id": self.eval.id,
                "job_version": job.version,
                "resources": new_res,
                "allocated_resources": updated_in_place(
                    tg, existing.allocated_resources, self.config.memory_oversubscription_enabled
                ),
                "desired_description": ALLOC_IN_PLACE,
            }
        )
        return False, False, updated

    def _job_lookup(self, alloc: Allocation) -> Job | None:
        return self.state.job_version(alloc.namespace, alloc.job_id, alloc.job_version)

    # --- the pass ---
    def process(self) -> SchedulerResult:
        evaluation = self.eval
        allocs = self.state.allocs_by_job(evaluation.namespace, evaluation.job_id)
        deployment = self.state.latest_deployment(evaluation.namespace, evaluation.job_id)
        rec = Reconciler(
            JobState(
                job_id=evaluation.job_id,
                namespace=evaluation.namespace,
                job=self.job,
                batch=self.batch,
                deployment=deployment,
                job_lookup=self._job_lookup,
            ),
            ClusterState(
                allocs=allocs,
                tainted_nodes=tainted_nodes(self.state, allocs),
                placement_scores=self.placement_scores,
            ),
            EvalContext(
                eval_id=evaluation.id, eval_priority=evaluation.priority, now=self.now, new_id=self.new_id
            ),
            self._update_fn,
        )
        results = rec.compute()
        self.deployment = rec.deployments.current
        self.plan.deployment = results.deployment
        self.plan.deployment_updates = results.deployment_updates
        self.plan.annotations = results.desired_tg_updates
        if self.job is not None:
            self.plan.all_at_once = self.job.all_at_once

        for s in results.stop:
            self._append_stop(s.alloc, s.description, s.client_status, s.followup_eval_id)
        for upd in (results.attribute_updates, results.disconnect_updates, results.reconnect_updates):
            for a in upd.values():
                self.plan.append_alloc(a)
        # An alloc updated in place joins the deployment this plan creates, its health to be
        # judged again (Nomad's computeJobAllocs): otherwise that deployment waits for allocs
        # it never counts.
        new_deployment = self.plan.deployment.id if self.plan.deployment is not None else ""
        for a in results.inplace:
            if new_deployment and a.deployment_id != new_deployment:
                a = a.model_copy(update={"deployment_id": new_deployment, "deployment_status": None})
            self.plan.append_alloc(a)

        if self.job is not None and not self.job.stopped():
            destructive = [
                (PlaceRequest(name=d.name, task_group=d.task_group, previous=d.stop), d.stop, d.description)
                for d in results.destructive
            ]
            places = [(p, p.previous if p.stop_previous else None, p.stop_previous) for p in results.place]
            for req, stop_prev, desc in destructive + places:
                self._place(req, stop_prev, desc)

        return self._finish(results.followup_evals)

    def _place(self, req: PlaceRequest, stop_prev: Allocation | None, stop_desc: str) -> None:
        assert self.job is not None
        tg = req.task_group
        if tg.name in self.failed:
            # Later failures of a group are coalesced into the first one's metrics.
            self.failed[tg.name].coalesced_failures += 1
            self.queued[tg.name] = self.queued.get(tg.name, 0) + 1
            return
        stack = self._stack(tg)
        if stop_prev is not None:
            self._append_stop(stop_prev, stop_desc)
        options = SelectOptions()
        prev = req.previous
        if prev is not None and req.reschedule:
            options.penalty_nodes = {prev.node_id}
            if prev.reschedule_tracker is not None:
                options.penalty_nodes |= {e.prev_node_id for e in prev.reschedule_tracker.events}
        sel = stack.select(options)
        ports = None
        while sel is not None and stack.ports.active:
            # The stack only offers nodes where the ports fit; should the draw fail anyway,
            # the node is blocked and the next one tried.
            ports = stack.assign_ports(sel.row)
            if ports is not None:
                break
            sel = stack.select(options)
        if sel is None and self.preemption:
            sel = preempt_for_group(self.plan, stack, self.state)
        if sel is None:
            if stop_prev is not None:
                self._pop_stop(stop_prev)
            self.failed[tg.name] = stack.failure_metric(self.nodes_available, self.nodes_in_pool)
            self.queued[tg.name] = self.queued.get(tg.name, 0) + 1
            return
        given = None
        if ports is not None and stack.ports.network is not None:
            base = self._alloc_template(tg).allocated_resources or group_allocation(
                tg, self.config.memory_oversubscription_enabled
            )
            given = with_ports(base, stack.ports.network, *ports)
        alloc = self._new_alloc(req, sel, given)
        alloc = claim_preempted(self.plan, alloc)
        self.plan.append_alloc(alloc)
        self._ensure_table().add_usage(alloc.node_id, alloc, 1)
        for st in self._stacks.values():
            if st.tg.name == tg.name:
                st.placed(sel.row, alloc)
            else:
                st.job_count[sel.row] += 1

    def _resources(self, tg: TaskGroup) -> Resources:
        r = self._ask.get(tg.name)
        if r is None:
            r = self._ask[tg.name] = tg.combined_resources()
        return r

    def _alloc_template(self, tg: TaskGroup) -> Allocation:
        """The members every placement of `tg` in this eval shares, validated once."""
        t = self._templates.get(tg.name)
        if t is None:
            assert self.job is not None
            t = self._templates[tg.name] = Allocation(
                namespace=self.job.namespace,
                eval_id=self.eval.id,
                job_id=self.job.id,
                job_version=self.job.version,
                task_group=tg.name,
                resources=self._resources(tg),
                allocated_resources=group_allocation(tg, self.config.memory_oversubscription_enabled),
                desired_status=ALLOC_DESIRED_RUN,
                client_status=ALLOC_CLIENT_PENDING,
                create_time=self.now,
                modify_time=self.now,
            )
        return t

    def _metric(self, sel: Selection) -> AllocMetric:
        if self._metric_template is None:
            # After the node table is built: the pool's counts are the table's.
            self._metric_template = AllocMetric(
                nodes_in_pool=self.nodes_in_pool, nodes_available=self.nodes_available
            )
        return copy_with(
            self._metric_template,
            {"nodes_evaluated": sel.nodes_evaluated, "score_meta_data": [score_meta(sel)]},
        )

    def _new_alloc(
        self, req: PlaceRequest, sel: Selection, given: AllocatedResources | None = None
    ) -> Allocation:
        assert self.job is not None
        tg = req.task_group
        # A copy of the group's template with the placement's own members: building each
        # alloc through the validating constructor was a fifth of scheduling a large job.
        fields: dict[str, object] = {
            "id": self.new_id(),
            "name": req.name,
            "node_id": sel.node.id,
            "node_name": sel.node.name,
            "metrics": self._metric(sel),
        }
        if given is not None:
            fields["allocated_resources"] = given
        dep = self.deployment
        if (
            dep is not None
            and dep.active()
            and tg.name in dep.task_groups
            and not (req.downgrade_non_canary and not req.canary)
        ):
            fields["deployment_id"] = dep.id
            if req.canary:
                fields["deployment_status"] = AllocDeploymentStatus(canary=True)
        prev = req.previous
        if prev is not None:
            fields["previous_allocation"] = prev.id
            if req.reschedule:
                old_job = self._job_lookup(prev) or self.job
                old_tg = old_job.lookup_task_group(prev.task_group)
                policy = (
                    old_tg.reschedule_policy
                    if old_tg is not None and old_tg.reschedule_policy is not None
                    else default_reschedule_policy(old_job.type)
                )
                fields["reschedule_tracker"] = new_reschedule_tracker(prev, policy, self.now)
        alloc = copy_with(self._alloc_template(tg), fields)
        if req.canary and dep is not None and tg.name in dep.task_groups:
            dep.task_groups[tg.name].placed_canaries.append(alloc.id)
            if self.plan.deployment is None:
                self.plan.deployment = dep
        return alloc

    def _finish(self, followups: list[Evaluation]) -> SchedulerResult:
        evaluation = self.eval.model_copy(
            update={
                "failed_tg_allocs": self.failed,
                "queued_allocations": {tg: self.queued.get(tg, 0) for tg in (self._tg_names())},
                "snapshot_index": self.state.index,
            }
        )
        for f in followups:
            f.create_time = f.modify_time = self.now
        return finish_failed(
            evaluation,
            self.plan,
            list(followups),
            failed=bool(self.failed),
            class_eligibility=self._class_eligibility(),
            escaped=any(st.feasible_set.escaped for st in self._stacks.values()),
            new_id=self.new_id,
            now=self.now,
        )

    def _class_eligibility(self) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for st in self._stacks.values():
            for cls, ok in st.feasible_set.class_eligibility.items():
                out[cls] = out.get(cls, False) or ok
        return out

    def _tg_names(self) -> list[str]:
        return [tg.name for tg in self.job.task_groups] if self.job is not None else []


def _dedupe(allocs: list[Allocation]) -> list[Allocation]:
    seen: dict[str, Allocation] = {}
    for a in allocs:
        seen[a.id] = a
    return list(seen.values())
