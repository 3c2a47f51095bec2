"""The garbage collector's events (drover.control decides them): what the collector saw, and
what still is so when the event applies, goes - an eval or an alloc still terminal (an alloc
also not running on its client), a deployment still inactive, a job or a node unchanged since.
What changed meanwhile stays for the collector's next pass; replaying the log decides alike.
Nomad's event stream carries none of them; the log keeps every collected object's history."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from drover.model.alloc import ALLOC_CLIENT_RUNNING, CLIENT_TERMINAL, DESIRED_TERMINAL
from drover.model.deployment import ACTIVE_DEPLOYMENT_STATUSES
from drover.model.evaluation import EVAL_STATUS_CANCELED, EVAL_STATUS_COMPLETE, EVAL_STATUS_FAILED
from drover.model.events.base import Event, Reads, job_stream

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

EVAL_TERMINAL = (EVAL_STATUS_COMPLETE, EVAL_STATUS_FAILED, EVAL_STATUS_CANCELED)


def alloc_collectable(desired_status: str, client_status: str) -> bool:
    """Whether an alloc in these statuses may leave the state: terminal, and not running on
    its client (a stopped alloc whose client has not yet stopped it stays)."""
    terminal = desired_status in DESIRED_TERMINAL or client_status in CLIENT_TERMINAL
    return terminal and client_status != ALLOC_CLIENT_RUNNING


class Collected(Event):
    """Objects the garbage collector collected: they leave the state; the log keeps them."""

    nomad_event_type: ClassVar[str | None] = None

    def stream(self) -> str:
        return "gc"


class EvalsCollected(Collected):
    """Evals and allocs collected (Nomad's eval reap): those still terminal (an alloc also not
    running on its client) go."""

    type: Literal["EvalsCollected"] = "EvalsCollected"
    evals: list[str] = Field(default_factory=list)
    allocs: list[str] = Field(default_factory=list)

    def apply_to(self, state: StateWriter, index: int) -> None:
        if self.allocs:
            statuses = state.alloc_statuses(self.allocs)
            state.delete_allocs([i for i, (d, c) in statuses.items() if alloc_collectable(d, c)])
        if self.evals:
            found = state.eval_statuses(self.evals)
            state.delete_evals([i for i, status in found.items() if status in EVAL_TERMINAL])

    def reads(self, r: Reads) -> None:
        r.refs.setdefault("allocs", []).extend(self.allocs)
        r.refs.setdefault("evals", []).extend(self.evals)


class DeploymentsCollected(Collected):
    """Deployments collected: those still inactive go."""

    type: Literal["DeploymentsCollected"] = "DeploymentsCollected"
    deployments: list[str]

    def apply_to(self, state: StateWriter, index: int) -> None:
        found = state.deployment_statuses(self.deployments)
        state.delete_deployments([i for i, s in found.items() if s not in ACTIVE_DEPLOYMENT_STATUSES])

    def reads(self, r: Reads) -> None:
        r.refs.setdefault("deployments", []).extend(self.deployments)


class NodesCollected(Collected):
    """Down nodes collected (Nomad's node reap): those unchanged since log position `as_of` go."""

    type: Literal["NodesCollected"] = "NodesCollected"
    nodes: list[str]
    as_of: int

    def apply_to(self, state: StateWriter, index: int) -> None:
        for node_id in self.nodes:
            node = state.node(node_id)
            if node is not None and node.modify_index <= self.as_of:
                state.delete_node(node_id)

    def reads(self, r: Reads) -> None:
        r.nodes.extend(self.nodes)


class JobCollected(Event):
    """A dead job collected with its versions (Nomad's job reap), if unchanged since log
    position `as_of`; in the job's stream, so a register decided before it is decided again."""

    type: Literal["JobCollected"] = "JobCollected"
    nomad_event_type: ClassVar[str | None] = None
    namespace: str = "default"
    job_id: str
    as_of: int

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)

    def apply_to(self, state: StateWriter, index: int) -> None:
        job = state.job(self.namespace, self.job_id)
        if job is not None and job.modify_index <= self.as_of:
            state.delete_job(self.namespace, self.job_id)

    def reads(self, r: Reads) -> None:
        r.jobs.append((self.namespace, self.job_id))
