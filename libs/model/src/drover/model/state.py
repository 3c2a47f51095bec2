"""The cluster state: the read-only snapshot protocol the scheduler works from, and the
in-memory store every replica keeps (fed by the event reducer).

The scheduler never mutates what it reads; services keep an `InMemoryState` replica fed by the
event stream and hand it (or a copy) to the scheduler.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from drover.model import Allocation, Deployment, Evaluation, Job, Node
from drover.model.alloc import ReplicaAllocation, lean_members
from drover.model.allocsharing import NO_FIELDS_SET, SHARED_EMPTY, AllocSharing
from drover.model.catalogstate import CatalogState
from drover.model.job import Resources
from drover.model.jobrestart import JobRestart
from drover.model.node import compute_class
from drover.model.operatorstate import OperatorState
from drover.model.scaling import JobScalingEvents
from drover.model.schedulerconfig import SchedulerConfiguration

JobKey = tuple[str, str]
# Members `place_columns` reads once for all allocs of a plan (what compaction shares, the
# usage it counts, the job it indexes under): in a column, they differ from alloc to alloc.
_PER_GROUP = {
    "resources",
    "allocated_resources",
    "desired_transition",
    "desired_status",
    "client_status",
    "namespace",
    "job_id",
    *SHARED_EMPTY,
}


class StateSnapshot(Protocol):
    """What the scheduling core needs to read."""

    @property
    def index(self) -> int: ...

    def node(self, node_id: str) -> Node | None: ...

    def all_nodes(self) -> Iterable[Node]: ...

    def job(self, namespace: str, job_id: str) -> Job | None: ...

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None: ...

    def allocs_by_job(self, namespace: str, job_id: str) -> list[Allocation]: ...

    def allocs_by_node(self, node_id: str) -> list[Allocation]: ...

    def alloc(self, alloc_id: str) -> Allocation | None: ...

    def node_usage(self, node_id: str) -> tuple[int, int, int]: ...

    def latest_deployment(self, namespace: str, job_id: str) -> Deployment | None: ...

    def deployment(self, deployment_id: str) -> Deployment | None: ...

    # The scheduler configuration a job of the pool is placed with (the pool's overrides on
    # the cluster's).
    def config_for_pool(self, name: str) -> SchedulerConfiguration: ...


def holds_ports(a: Allocation) -> bool:
    """Whether the alloc was given host ports (its AllocatedResources name any)."""
    ar = a.allocated_resources
    return ar is not None and bool(ar.shared.ports)


def _usage(a: Allocation) -> tuple[int, int, int]:
    r = a.resources
    return r.cpu, r.memory_mb, r.disk_mb


class InMemoryState(CatalogState, OperatorState):
    """A mutable cluster state with the indexes the scheduler needs (allocs by job and node,
    per-node resource usage of non-terminal allocs kept incrementally)."""

    def __init__(self, *, drop_metrics: bool = False, owns_events: bool = False) -> None:
        # Replicas drop alloc metrics (nothing they run reads them, and they are half an alloc)
        # and keep allocs compact: see `_compact`.
        self.drop_metrics = drop_metrics
        # Set where every event applied was decoded for this state and is not used after: the
        # reducer then keeps an event's allocs themselves instead of copies.
        self.owns_events = owns_events
        self._sharing = AllocSharing()
        self._index = 0
        self.nodes: dict[str, Node] = {}
        # The keyed hashes of the nodes' SecretIDs (NodeRegistered.secret_hash), by node ID.
        self.node_secret_hashes: dict[str, str] = {}
        self.jobs: dict[JobKey, Job] = {}
        self.job_versions: dict[JobKey, dict[int, Job]] = {}
        self.allocs: dict[str, Allocation] = {}
        self._port_nodes: dict[str, int] = {}
        self.evals: dict[str, Evaluation] = {}
        self.deployments: dict[str, Deployment] = {}
        self.job_restarts: dict[str, JobRestart] = {}
        self.scaling: dict[JobKey, JobScalingEvents] = {}
        # Variables, service registrations, ACL policies and tokens (drover.model.catalogstate).
        self.init_catalogs()
        # The scheduler configuration and the node pools (drover.model.operatorstate).
        self.init_operator()
        self._restarts_by_job: dict[JobKey, dict[str, JobRestart]] = {}
        self._by_job: dict[JobKey, dict[str, Allocation]] = {}
        self._by_node: dict[str, dict[str, Allocation]] = {}
        # Usage of non-terminal allocs per node: cpu, memory, disk at 3 * slot. A flat array
        # rather than a dict of lists, so a scheduler can take every node's usage at once
        # (usage_slots, usage_buffer) instead of asking node by node.
        self._slot: dict[str, int] = {}
        self._used = array("q")
        self._latest_deployment: dict[JobKey, str] = {}
        # Bumped on every node change; `derived` holds what readers compute from the node set
        # alone (the scheduler's ready-node tables), valid while the version stands.
        self.nodes_version = 0
        self.derived: dict[object, object] = {}

    # --- reads (StateSnapshot) ---
    @property
    def index(self) -> int:
        return self._index

    def node(self, node_id: str) -> Node | None:
        return self.nodes.get(node_id)

    def all_nodes(self) -> Iterable[Node]:
        return self.nodes.values()

    def job(self, namespace: str, job_id: str) -> Job | None:
        return self.jobs.get((namespace, job_id))

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None:
        return self.job_versions.get((namespace, job_id), {}).get(version)

    def allocs_by_job(self, namespace: str, job_id: str) -> list[Allocation]:
        return list(self._by_job.get((namespace, job_id), {}).values())

    def allocs_by_node(self, node_id: str) -> list[Allocation]:
        return list(self._by_node.get(node_id, {}).values())

    def alloc(self, alloc_id: str) -> Allocation | None:
        return self.allocs.get(alloc_id)

    def eval(self, eval_id: str) -> Evaluation | None:
        return self.evals.get(eval_id)

    def node_usage(self, node_id: str) -> tuple[int, int, int]:
        slot = self._slot.get(node_id)
        if slot is None:
            return (0, 0, 0)
        i, used = 3 * slot, self._used
        return (used[i], used[i + 1], used[i + 2])

    def usage_slots(self, node_ids: Iterable[str]) -> list[int]:
        """Where each node's usage is in `usage_buffer` (3 * slot: cpu, memory, disk)."""
        return [self._slot_of(n) for n in node_ids]

    def usage_buffer(self) -> array[int]:
        """Every node's usage, by slot; read it at once, before the state changes again."""
        return self._used

    def _slot_of(self, node_id: str) -> int:
        slot = self._slot.get(node_id)
        if slot is None:
            slot = self._slot[node_id] = len(self._used) // 3
            self._used.extend((0, 0, 0))
        return slot

    def latest_deployment(self, namespace: str, job_id: str) -> Deployment | None:
        dep_id = self._latest_deployment.get((namespace, job_id))
        return self.deployments.get(dep_id) if dep_id else None

    def deployment(self, deployment_id: str) -> Deployment | None:
        return self.deployments.get(deployment_id)

    def job_restart(self, restart_id: str) -> JobRestart | None:
        return self.job_restarts.get(restart_id)

    def scaling_events(self, namespace: str, job_id: str) -> JobScalingEvents | None:
        return self.scaling.get((namespace, job_id))

    def job_restarts_of(self, namespace: str, job_id: str) -> list[JobRestart]:
        return list(self._restarts_by_job.get((namespace, job_id), {}).values())

    # --- writes ---
    def bump(self, index: int | None = None) -> int:
        self._index = index if index is not None else self._index + 1
        return self._index

    def upsert_node(self, node: Node) -> None:
        if not node.computed_class:
            node = node.model_copy(update={"computed_class": compute_class(node)})
        self.nodes[node.id] = node
        self._nodes_changed()

    def delete_node(self, node_id: str) -> None:
        self.nodes.pop(node_id, None)
        self.node_secret_hashes.pop(node_id, None)
        self._nodes_changed()

    def set_node_secret_hash(self, node_id: str, secret_hash: str) -> None:
        self.node_secret_hashes[node_id] = secret_hash

    def _nodes_changed(self) -> None:
        self.nodes_version += 1
        self.derived.clear()

    def upsert_job(self, job: Job) -> None:
        key = (job.namespace, job.id)
        self.jobs[key] = job
        self.job_versions.setdefault(key, {})[job.version] = job

    def delete_job(self, namespace: str, job_id: str) -> None:
        # With its versions, as the projections forget them (a purge, or collected).
        self.jobs.pop((namespace, job_id), None)
        self.job_versions.pop((namespace, job_id), None)
        self.scaling.pop((namespace, job_id), None)

    def upsert_job_version(self, job: Job) -> None:
        """A version of the job, not the current one (the current one: `upsert_job`)."""
        self.job_versions.setdefault((job.namespace, job.id), {})[job.version] = job

    def upsert_scaling_events(self, events: JobScalingEvents) -> None:
        self.scaling[(events.namespace, events.job_id)] = events

    def upsert_eval(self, evaluation: Evaluation) -> None:
        self.evals[evaluation.id] = evaluation

    def upsert_deployment(self, dep: Deployment) -> None:
        self.deployments[dep.id] = dep
        key = (dep.namespace, dep.job_id)
        cur = self.deployments.get(self._latest_deployment.get(key, ""))
        if cur is None or cur.id == dep.id or dep.create_index >= cur.create_index:
            self._latest_deployment[key] = dep.id

    def upsert_job_restart(self, restart: JobRestart) -> None:
        self.job_restarts[restart.id] = restart
        self._restarts_by_job.setdefault((restart.namespace, restart.job_id), {})[restart.id] = restart

    def delete_job_restart(self, restart: JobRestart) -> None:
        self.job_restarts.pop(restart.id, None)
        by_job = self._restarts_by_job.get((restart.namespace, restart.job_id), {})
        by_job.pop(restart.id, None)

    # --- what the garbage collector deletes (drover.model.gcreducer) ---
    def alloc_statuses(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        found = (self.allocs.get(i) for i in ids)
        return {a.id: (a.desired_status, a.client_status) for a in found if a is not None}

    def eval_statuses(self, ids: Sequence[str]) -> dict[str, str]:
        found = (self.evals.get(i) for i in ids)
        return {e.id: e.status for e in found if e is not None}

    def deployment_statuses(self, ids: Sequence[str]) -> dict[str, str]:
        found = (self.deployments.get(i) for i in ids)
        return {d.id: d.status for d in found if d is not None}

    def delete_allocs(self, ids: Sequence[str]) -> None:
        for alloc_id in ids:
            a = self.allocs.pop(alloc_id, None)
            if a is None:
                continue
            if not a.terminal_status():
                self._add_usage(a.node_id, _usage(a), -1)
                self._count_ports(a, -1)
            _forget(self._by_job, (a.namespace, a.job_id), alloc_id)
            _forget(self._by_node, a.node_id, alloc_id)

    def delete_evals(self, ids: Sequence[str]) -> None:
        for eval_id in ids:
            self.evals.pop(eval_id, None)

    def delete_deployments(self, ids: Sequence[str]) -> None:
        orphaned: set[JobKey] = set()
        for dep_id in ids:
            dep = self.deployments.pop(dep_id, None)
            key = (dep.namespace, dep.job_id) if dep is not None else None
            if key is not None and self._latest_deployment.get(key) == dep_id:
                del self._latest_deployment[key]
                orphaned.add(key)
        # A job's latest deployment collected: the newest left is its latest again.
        for dep in self.deployments.values() if orphaned else ():
            key = (dep.namespace, dep.job_id)
            if key in orphaned:
                cur = self.deployments.get(self._latest_deployment.get(key, ""))
                if cur is None or dep.create_index >= cur.create_index:
                    self._latest_deployment[key] = dep.id

    def upsert_alloc(self, alloc: Allocation) -> None:
        if self.drop_metrics:
            if alloc.metrics is not None:
                alloc = alloc.model_copy(update={"metrics": None})
            self._compact(alloc)
        old = self.allocs.get(alloc.id)
        if old is not None:
            if not old.terminal_status():
                self._add_usage(old.node_id, _usage(old), -1)
                self._count_ports(old, -1)
            if old.node_id != alloc.node_id:
                self._by_node.get(old.node_id, {}).pop(old.id, None)
        self.allocs[alloc.id] = alloc
        self._by_job.setdefault((alloc.namespace, alloc.job_id), {})[alloc.id] = alloc
        self._by_node.setdefault(alloc.node_id, {})[alloc.id] = alloc
        if not alloc.terminal_status():
            self._add_usage(alloc.node_id, _usage(alloc), 1)
            self._count_ports(alloc, 1)

    def _compact(self, alloc: Allocation) -> dict[str, Any]:
        """Share what most allocs hold equal copies of (drover.model.allocsharing) and the
        node's ID and name, and hold a replica's alloc's members lean (`lean_members`).
        Returns the alloc's members as it now holds them."""
        fields = alloc.__dict__
        self._sharing.share(fields)
        if type(alloc) is ReplicaAllocation:
            fields = lean_members(fields)
            object.__setattr__(alloc, "__dict__", fields)
        # The node's ID and name: its own strings, not a copy per alloc (a decoder may make one
        # per alloc: 120 MB at 1,000,000 allocs).
        node = self.nodes.get(fields["node_id"])
        if node is not None:
            fields["node_id"] = node.id
            if fields["node_name"] == node.name:
                fields["node_name"] = node.name
        object.__setattr__(alloc, "__pydantic_fields_set__", NO_FIELDS_SET)
        return fields

    def place_new(self, allocs: Iterable[Allocation], update: dict[str, object]) -> list[Allocation]:
        """Insert the allocs of `allocs` this state does not hold yet, each with `update` put
        into it in place, and return the others (for the caller's general path). Only a state
        that owns its events and drops metrics (a replica) takes any; any other returns them
        all. A plan's new placements are most of what replicas apply, and this is `upsert_alloc`
        without what a new alloc never needs (an old copy to undo), with what the allocs of one
        event share looked up once."""
        if not (self.owns_events and self.drop_metrics):
            return list(allocs)
        known: list[Allocation] = []
        by_id, by_node, slot_of, used = self.allocs, self._by_node, self._slot, self._used
        job_key: JobKey | None = None
        by_job: dict[str, Allocation] = {}
        for a in allocs:
            if a.id in by_id:
                known.append(a)
                continue
            a.__dict__.update(update)
            fields = self._compact(a)
            key = (fields["namespace"], fields["job_id"])
            if key != job_key:
                job_key, by_job = key, self._by_job.setdefault(key, {})
            by_id[a.id] = a
            by_job[a.id] = a
            node_id = fields["node_id"]
            on_node = by_node.get(node_id)
            if on_node is None:
                on_node = by_node[node_id] = {}
            on_node[a.id] = a
            if not a.terminal_status():
                slot = slot_of.get(node_id)
                i = 3 * (slot if slot is not None else self._slot_of(node_id))
                r = fields["resources"]
                used[i] += r.cpu
                used[i + 1] += r.memory_mb
                used[i + 2] += r.disk_mb
                self._count_ports(a, 1)
        return known

    def place_columns(
        self, template: Allocation, columns: list[tuple[str, list[Any]]], update: dict[str, object]
    ) -> tuple[list[Allocation], list[Allocation]] | None:
        """`place_new` for a plan's allocs in columns (drover.model.placements), built here
        rather than decoded first: `update` is put into the template and the template compacted
        once, and each alloc is a copy of it with its column values (its ID, name and node)
        put in. Returns every alloc built, and those this state already held (for the
        caller's general path); None where `place_new` would take none, or the columns hold
        members that compaction or the usage count read per alloc (the caller then builds the
        allocs and goes through `place_new`)."""
        if not (self.owns_events and self.drop_metrics) or not columns:
            return None
        if any(name in _PER_GROUP or name in update for name, _ in columns):
            return None
        base: dict[str, Any] = template.__dict__.copy()
        base.update(update)
        self._sharing.share(base)
        if type(template) is ReplicaAllocation:
            base = lean_members(base)
        docs = [base.copy() for _ in columns[0][1]]
        for name, values in columns:
            for doc, v in zip(docs, values, strict=True):
                doc[name] = v
        cls, new, put, nodes = type(template), object.__new__, object.__setattr__, self.nodes
        r: Resources = base["resources"]
        cpu, memory, disk = r.cpu, r.memory_mb, r.disk_mb
        probe = new(cls)
        put(probe, "__dict__", base)
        counts = not probe.terminal_status()
        by_id, by_node, slot_of, used = self.allocs, self._by_node, self._slot, self._used
        by_job = self._by_job.setdefault((base["namespace"], base["job_id"]), {})
        built: list[Allocation] = []
        known: list[Allocation] = []
        for doc in docs:
            a = new(cls)
            put(a, "__dict__", doc)
            put(a, "__pydantic_fields_set__", NO_FIELDS_SET)
            put(a, "__pydantic_extra__", None)
            put(a, "__pydantic_private__", None)
            built.append(a)
            alloc_id: str = doc["id"]
            if alloc_id in by_id:
                known.append(a)
                continue
            node_id: str = doc["node_id"]
            node = nodes.get(node_id)
            if node is not None:  # the node's own strings, as in _compact
                doc["node_id"] = node_id = node.id
                if doc["node_name"] == node.name:
                    doc["node_name"] = node.name
            by_id[alloc_id] = a
            by_job[alloc_id] = a
            on_node = by_node.get(node_id)
            if on_node is None:
                on_node = by_node[node_id] = {}
            on_node[alloc_id] = a
            if counts:
                slot = slot_of.get(node_id)
                i = 3 * (slot if slot is not None else self._slot_of(node_id))
                used[i] += cpu
                used[i + 1] += memory
                used[i + 2] += disk
        return built, known

    def port_nodes(self) -> dict[str, int]:
        """Nodes holding live allocs that were given host ports, with how many: the only nodes
        where a port may be taken (drover.scheduler.netindex)."""
        return self._port_nodes

    def _count_ports(self, a: Allocation, sign: int) -> None:
        if holds_ports(a):
            n = self._port_nodes.get(a.node_id, 0) + sign
            if n > 0:
                self._port_nodes[a.node_id] = n
            else:
                self._port_nodes.pop(a.node_id, None)

    def _add_usage(self, node_id: str, u: tuple[int, int, int], sign: int) -> None:
        slot = self._slot.get(node_id)
        i = 3 * (slot if slot is not None else self._slot_of(node_id))
        used = self._used
        used[i] += sign * u[0]
        used[i + 1] += sign * u[1]
        used[i + 2] += sign * u[2]


def _forget(index: dict[Any, dict[str, Allocation]], key: Any, alloc_id: str) -> None:
    """Drop `alloc_id` from `index[key]`, and the key once it holds none."""
    by_key = index.get(key)
    if by_key is not None:
        by_key.pop(alloc_id, None)
        if not by_key:
            del index[key]


def has_flat_usage(state: object) -> bool:
    """Whether `state` keeps every node's usage in one flat array (`usage_slots`,
    `usage_buffer`) that agrees with its `node_usage`: an `InMemoryState` that does not
    override `node_usage`, or a view over one that says so (`flat_usage`)."""
    if isinstance(state, InMemoryState):
        return type(state).node_usage is InMemoryState.node_usage
    return bool(getattr(state, "flat_usage", False))
