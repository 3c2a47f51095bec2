"""What the commands read of the cluster, as a protocol: the API answers it from the
projections (`drover.runtime.store.queries.Reads`), tests and services holding a replica from
an `InMemoryState` (`StateReads`)."""

from __future__ import annotations

from typing import Protocol

from drover.model import Allocation, Deployment, Job, Node
from drover.model.events import job_stream, restart_stream
from drover.model.jobrestart import JobRestart
from drover.model.serviceregistration import ServiceRegistration
from drover.model.state import InMemoryState


class ClusterReads(Protocol):
    """The reads a command may make. Documents are as the projections hold them (a job's
    derived Status is not needed by any command)."""

    def job(self, namespace: str, job_id: str) -> Job | None: ...

    def job_versions(self, namespace: str, job_id: str) -> list[Job]: ...

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None: ...

    def job_stream_version(self, namespace: str, job_id: str) -> int: ...

    def node(self, node_id: str) -> Node | None: ...

    def nodes_by_id(self, node_ids: list[str]) -> dict[str, Node]: ...

    def node_statuses(self, node_ids: list[str]) -> dict[str, str]: ...

    # The keyed hash of the node's SecretID ("" for an unknown node).
    def node_secret_hash(self, node_id: str) -> str: ...

    def live_jobs_on(self, node_id: str) -> list[Job]: ...

    def system_jobs(self) -> list[Job]: ...

    def allocs_by_id(self, alloc_ids: list[str]) -> dict[str, Allocation]: ...

    def deployment(self, deployment_id: str) -> Deployment | None: ...

    def deployment_allocs(self, dep: Deployment) -> list[Allocation]: ...

    def active_deployment(self, namespace: str, job_id: str) -> Deployment | None: ...

    def job_allocs(self, namespace: str, job_id: str) -> list[Allocation]: ...

    def job_restart(self, restart_id: str) -> JobRestart | None: ...

    def job_restarts_of(self, namespace: str, job_id: str) -> list[JobRestart]: ...

    def restart_stream_version(self, namespace: str, job_id: str) -> int: ...

    def service(self, service_id: str) -> ServiceRegistration | None: ...


class StateReads:
    """`ClusterReads` over an in-memory state (a replica, or a test's)."""

    def __init__(self, state: InMemoryState, stream_versions: dict[str, int] | None = None) -> None:
        self.state = state
        # The event log's stream versions are not part of the state: a test sets them.
        self.stream_versions = stream_versions or {}

    def job(self, namespace: str, job_id: str) -> Job | None:
        return self.state.job(namespace, job_id)

    def job_versions(self, namespace: str, job_id: str) -> list[Job]:
        versions = self.state.job_versions.get((namespace, job_id), {})
        return sorted(versions.values(), key=lambda j: j.version, reverse=True)

    def job_version(self, namespace: str, job_id: str, version: int) -> Job | None:
        return self.state.job_version(namespace, job_id, version)

    def job_stream_version(self, namespace: str, job_id: str) -> int:
        return self.stream_versions.get(job_stream(namespace, job_id), 0)

    def node(self, node_id: str) -> Node | None:
        return self.state.node(node_id)

    def nodes_by_id(self, node_ids: list[str]) -> dict[str, Node]:
        return {n: node for n in node_ids if (node := self.state.node(n)) is not None}

    def node_statuses(self, node_ids: list[str]) -> dict[str, str]:
        return {n: node.status for n, node in self.nodes_by_id(node_ids).items()}

    def node_secret_hash(self, node_id: str) -> str:
        return self.state.node_secret_hashes.get(node_id, "")

    def live_jobs_on(self, node_id: str) -> list[Job]:
        keys = dict.fromkeys(
            (a.namespace, a.job_id) for a in self.state.allocs_by_node(node_id) if not a.terminal_status()
        )
        return [j for ns, jid in keys if (j := self.state.job(ns, jid)) is not None]

    def system_jobs(self) -> list[Job]:
        return [j for j in self.state.jobs.values() if j.is_system() and not j.stop]

    def allocs_by_id(self, alloc_ids: list[str]) -> dict[str, Allocation]:
        return {i: a for i in alloc_ids if (a := self.state.alloc(i)) is not None}

    def deployment(self, deployment_id: str) -> Deployment | None:
        return self.state.deployment(deployment_id)

    def active_deployment(self, namespace: str, job_id: str) -> Deployment | None:
        dep = self.state.latest_deployment(namespace, job_id)
        return dep if dep is not None and dep.active() else None

    def job_allocs(self, namespace: str, job_id: str) -> list[Allocation]:
        return self.state.allocs_by_job(namespace, job_id)

    def job_restart(self, restart_id: str) -> JobRestart | None:
        return self.state.job_restart(restart_id)

    def job_restarts_of(self, namespace: str, job_id: str) -> list[JobRestart]:
        return self.state.job_restarts_of(namespace, job_id)

    def restart_stream_version(self, namespace: str, job_id: str) -> int:
        return self.stream_versions.get(restart_stream(namespace, job_id), 0)

    def service(self, service_id: str) -> ServiceRegistration | None:
        return self.state.service(service_id)

    def deployment_allocs(self, dep: Deployment) -> list[Allocation]:
        return sorted(
            (a for a in self.state.allocs_by_job(dep.namespace, dep.job_id) if a.deployment_id == dep.id),
            key=lambda a: a.id,
        )
