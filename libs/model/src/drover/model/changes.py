"""The rows each event changes, recorded as the reducer writes them: what Nomad's event stream
carries is derived from these (as Nomad derives its stream from the changed table rows), so an
event type needs no word of its own for the stream beyond its Nomad event Type."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from drover.model.acl import ACLPolicy, ACLToken
from drover.model.alloc import Allocation
from drover.model.deployment import Deployment
from drover.model.evaluation import Evaluation
from drover.model.job import Job
from drover.model.jobrestart import JobRestart
from drover.model.namespace import Namespace
from drover.model.node import Node
from drover.model.nodepool import NodePool
from drover.model.scaling import JobScalingEvents
from drover.model.schedulerconfig import SchedulerConfiguration
from drover.model.serviceregistration import ServiceRegistration
from drover.model.state import InMemoryState
from drover.model.variables import VariableEncrypted


@dataclass
class Changes:
    """The keys written, by table, in the order first written; and what was deleted, as it was
    just before."""

    written: dict[str, dict[Any, None]] = field(default_factory=dict)
    deleted: dict[str, dict[Any, Any]] = field(default_factory=dict)

    def wrote(self, table: str, key: Any) -> None:
        self.written.setdefault(table, {})[key] = None

    def wrote_all(self, table: str, keys: Iterable[Any]) -> None:
        self.written.setdefault(table, {}).update(dict.fromkeys(keys))

    def removed(self, table: str, key: Any, before: Any) -> None:
        if before is not None:
            self.deleted.setdefault(table, {})[key] = before


class TrackedState(InMemoryState):
    """An `InMemoryState` that records the rows each write changes in `changes`, while it is
    set. Every write of the reducer's `StateWriter` is recorded here (a test holds the two to
    the same list)."""

    def __init__(self, *, drop_metrics: bool = False, owns_events: bool = False) -> None:
        super().__init__(drop_metrics=drop_metrics, owns_events=owns_events)
        self.changes: Changes | None = None

    def upsert_node(self, node: Node) -> None:
        if self.changes is not None:
            self.changes.wrote("nodes", node.id)
        super().upsert_node(node)

    def delete_node(self, node_id: str) -> None:
        if self.changes is not None:
            self.changes.removed("nodes", node_id, self.nodes.get(node_id))
        super().delete_node(node_id)

    def upsert_job(self, job: Job) -> None:
        if self.changes is not None:
            self.changes.wrote("jobs", (job.namespace, job.id))
        super().upsert_job(job)

    def delete_job(self, namespace: str, job_id: str) -> None:
        if self.changes is not None:
            self.changes.removed("jobs", (namespace, job_id), self.jobs.get((namespace, job_id)))
        super().delete_job(namespace, job_id)

    def upsert_job_version(self, job: Job) -> None:
        if self.changes is not None:
            self.changes.wrote("job_versions", (job.namespace, job.id, job.version))
        super().upsert_job_version(job)

    def upsert_scaling_events(self, events: JobScalingEvents) -> None:
        if self.changes is not None:
            self.changes.wrote("scaling_events", (events.namespace, events.job_id))
        super().upsert_scaling_events(events)

    def upsert_eval(self, evaluation: Evaluation) -> None:
        if self.changes is not None:
            self.changes.wrote("evals", evaluation.id)
        super().upsert_eval(evaluation)

    def upsert_alloc(self, alloc: Allocation) -> None:
        if self.changes is not None:
            self.changes.wrote("allocs", alloc.id)
        super().upsert_alloc(alloc)

    def upsert_deployment(self, dep: Deployment) -> None:
        if self.changes is not None:
            self.changes.wrote("deployments", dep.id)
        super().upsert_deployment(dep)

    def upsert_job_restart(self, restart: JobRestart) -> None:
        if self.changes is not None:
            self.changes.wrote("job_restarts", restart.id)
        super().upsert_job_restart(restart)

    def delete_job_restart(self, restart: JobRestart) -> None:
        if self.changes is not None:
            self.changes.removed("job_restarts", restart.id, self.job_restarts.get(restart.id))
        super().delete_job_restart(restart)

    def upsert_variable(self, var: VariableEncrypted) -> None:
        if self.changes is not None:
            self.changes.wrote("variables", (var.namespace, var.path))
        super().upsert_variable(var)

    def delete_variable(self, namespace: str, path: str) -> None:
        if self.changes is not None:
            self.changes.removed("variables", (namespace, path), self.variables.get((namespace, path)))
        super().delete_variable(namespace, path)

    def set_scheduler_config(self, config: SchedulerConfiguration) -> None:
        if self.changes is not None:
            self.changes.wrote("scheduler_config", "")
        super().set_scheduler_config(config)

    def upsert_node_pool(self, pool: NodePool) -> None:
        if self.changes is not None:
            self.changes.wrote("node_pools", pool.name)
        super().upsert_node_pool(pool)

    def delete_node_pool(self, name: str) -> None:
        if self.changes is not None:
            self.changes.removed("node_pools", name, self.node_pools.get(name))
        super().delete_node_pool(name)

    def upsert_service(self, reg: ServiceRegistration) -> None:
        if self.changes is not None:
            self.changes.wrote("services", reg.id)
        super().upsert_service(reg)

    def delete_service(self, service_id: str) -> None:
        if self.changes is not None:
            self.changes.removed("services", service_id, self.services.get(service_id))
        super().delete_service(service_id)

    def delete_services_of(self, alloc_ids: Sequence[str], node_id: str) -> None:
        super().delete_services_of(alloc_ids, node_id)  # recorded one by one (delete_service)

    def upsert_namespace(self, ns: Namespace) -> None:
        if self.changes is not None:
            self.changes.wrote("namespaces", ns.name)
        super().upsert_namespace(ns)

    def delete_namespace(self, name: str) -> None:
        if self.changes is not None:
            self.changes.removed("namespaces", name, self.namespaces.get(name))
        super().delete_namespace(name)

    def upsert_acl_policy(self, policy: ACLPolicy) -> None:
        if self.changes is not None:
            self.changes.wrote("acl_policies", policy.name)
        super().upsert_acl_policy(policy)

    def delete_acl_policy(self, name: str) -> None:
        if self.changes is not None:
            self.changes.removed("acl_policies", name, self.acl_policies.get(name))
        super().delete_acl_policy(name)

    def upsert_acl_token(self, token: ACLToken) -> None:
        if self.changes is not None:
            self.changes.wrote("acl_tokens", token.accessor_id)
        super().upsert_acl_token(token)

    def delete_acl_token(self, accessor_id: str) -> None:
        if self.changes is not None:
            self.changes.removed("acl_tokens", accessor_id, self.acl_tokens.get(accessor_id))
        super().delete_acl_token(accessor_id)

    def delete_allocs(self, ids: Sequence[str]) -> None:
        if self.changes is not None:
            for i in ids:
                self.changes.removed("allocs", i, self.allocs.get(i))
        super().delete_allocs(ids)

    def delete_evals(self, ids: Sequence[str]) -> None:
        if self.changes is not None:
            for i in ids:
                self.changes.removed("evals", i, self.evals.get(i))
        super().delete_evals(ids)

    def delete_deployments(self, ids: Sequence[str]) -> None:
        if self.changes is not None:
            for i in ids:
                self.changes.removed("deployments", i, self.deployments.get(i))
        super().delete_deployments(ids)

    def place_new(self, allocs: Iterable[Allocation], update: dict[str, object]) -> list[Allocation]:
        allocs = list(allocs)
        known = super().place_new(allocs, update)
        if self.changes is not None:
            self._placed(allocs, known)
        return known

    def place_columns(
        self, template: Allocation, columns: list[tuple[str, list[Any]]], update: dict[str, object]
    ) -> tuple[list[Allocation], list[Allocation]] | None:
        out = super().place_columns(template, columns, update)
        if out is not None and self.changes is not None:
            self._placed(*out)
        return out

    def _placed(self, allocs: list[Allocation], known: list[Allocation]) -> None:
        """Record the allocs of `allocs` placed, not those handed back as `known` (the caller
        writes those through `upsert_alloc`)."""
        assert self.changes is not None
        if not known:
            self.changes.wrote_all("allocs", (a.id for a in allocs))
            return
        skip = {a.id for a in known}
        self.changes.wrote_all("allocs", (a.id for a in allocs if a.id not in skip))
