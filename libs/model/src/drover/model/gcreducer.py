"""How the garbage collector's events change the state (the one reducer's part for garbage
collection, drover.model.reducer): collected objects leave it, each only if it is still what
the collector saw when it decided - an eval or an alloc still terminal (an alloc also not
running on its client), a deployment still inactive, a job or a node unchanged since. What
changed meanwhile stays for the collector's next pass; replaying the log decides alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drover.model.alloc import ALLOC_CLIENT_RUNNING, CLIENT_TERMINAL, DESIRED_TERMINAL
from drover.model.deployment import ACTIVE_DEPLOYMENT_STATUSES
from drover.model.evaluation import EVAL_STATUS_CANCELED, EVAL_STATUS_COMPLETE, EVAL_STATUS_FAILED
from drover.model.events import DeploymentsCollected, EvalsCollected, JobCollected, NodesCollected

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter

EVAL_TERMINAL = (EVAL_STATUS_COMPLETE, EVAL_STATUS_FAILED, EVAL_STATUS_CANCELED)


def alloc_collectable(desired_status: str, client_status: str) -> bool:
    """Whether an alloc in these statuses may leave the state: terminal, and not running on
    its client (a stopped alloc whose client has not yet stopped it stays)."""
    terminal = desired_status in DESIRED_TERMINAL or client_status in CLIENT_TERMINAL
    return terminal and client_status != ALLOC_CLIENT_RUNNING


def evals_collected(state: StateWriter, index: int, ev: EvalsCollected) -> None:
    if ev.allocs:
        statuses = state.alloc_statuses(ev.allocs)
        state.delete_allocs([i for i, (d, c) in statuses.items() if alloc_collectable(d, c)])
    if ev.evals:
        found = state.eval_statuses(ev.evals)
        state.delete_evals([i for i, status in found.items() if status in EVAL_TERMINAL])


def deployments_collected(state: StateWriter, index: int, ev: DeploymentsCollected) -> None:
    found = state.deployment_statuses(ev.deployments)
    state.delete_deployments([i for i, s in found.items() if s not in ACTIVE_DEPLOYMENT_STATUSES])


def nodes_collected(state: StateWriter, index: int, ev: NodesCollected) -> None:
    for node_id in ev.nodes:
        node = state.node(node_id)
        if node is not None and node.modify_index <= ev.as_of:
            state.delete_node(node_id)


def job_collected(state: StateWriter, index: int, ev: JobCollected) -> None:
    job = state.job(ev.namespace, ev.job_id)
    if job is not None and job.modify_index <= ev.as_of:
        state.delete_job(ev.namespace, ev.job_id)
