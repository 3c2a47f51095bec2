"""The garbage collector's events (drover.control.gc decides them, drover.model.gcreducer
applies them): what the collector saw, and what still is so when the event applies, goes."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from drover.model.eventbase import Event, job_stream


class Collected(Event):
    """Objects the garbage collector collected: they leave the state; the log keeps them."""

    def stream(self) -> str:
        return "gc"


class EvalsCollected(Collected):
    """Evals and allocs collected (Nomad's eval reap): those still terminal (an alloc also not
    running on its client) go."""

    type: Literal["EvalsCollected"] = "EvalsCollected"
    category: ClassVar[str] = "Evaluation"
    evals: list[str] = Field(default_factory=list)
    allocs: list[str] = Field(default_factory=list)


class DeploymentsCollected(Collected):
    """Deployments collected: those still inactive go."""

    type: Literal["DeploymentsCollected"] = "DeploymentsCollected"
    category: ClassVar[str] = "Deployment"
    deployments: list[str]


class NodesCollected(Collected):
    """Down nodes collected (Nomad's node reap): those unchanged since log position `as_of` go."""

    type: Literal["NodesCollected"] = "NodesCollected"
    category: ClassVar[str] = "Node"
    nodes: list[str]
    as_of: int


class JobCollected(Event):
    """A dead job collected with its versions (Nomad's job reap), if unchanged since log
    position `as_of`; in the job's stream, so a register decided before it is decided again."""

    type: Literal["JobCollected"] = "JobCollected"
    category: ClassVar[str] = "Job"
    namespace: str = "default"
    job_id: str
    as_of: int

    def stream(self) -> str:
        return job_stream(self.namespace, self.job_id)
