"""Commands on allocs: what clients report of them (with the evals a failure or a reconnect
calls for), an operator's in-place restart, and an operator's stop."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from drover.control.change import Change
from drover.control.commands.reads import ClusterReads
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model.alloc import AllocRestartRequest, DesiredTransition
from drover.model.evaluation import (
    TRIGGER_ALLOC_STOP,
    TRIGGER_RECONNECT,
    TRIGGER_RETRY_FAILED_ALLOC,
    job_eval,
)
from drover.model.events import (
    AllocClientUpdate,
    AllocRestartRequested,
    AllocsClientUpdated,
    AllocsTransitioned,
    NewEvent,
)
from drover.model.node import NODE_STATUS_DISCONNECTED, NODE_STATUS_DOWN

CLIENT_STATUSES = ("pending", "running", "complete", "failed", "lost")
# The node statuses whose clients may not report (Nomad's UnresponsiveStatus).
UNRESPONSIVE = (NODE_STATUS_DOWN, NODE_STATUS_DISCONNECTED)


def client_update(reads: ClusterReads, node_id: str, updates: list[AllocClientUpdate], now: int) -> Change:
    """Clients report their allocs' status. As Nomad's UpdateAlloc: an alloc that newly failed
    while the servers want it running gets its job an alloc-failure eval (rescheduled per the
    reschedule block); one that was unknown (its node disconnected), whatever it reports now, a
    reconnect eval (the original or its replacement stays, per the disconnect block).

    Refused while an alloc's node is down or disconnected, as Nomad refuses it: the client must
    heartbeat first. A report that slipped in before that heartbeat would show the servers a
    running alloc on a disconnected node, to be marked unknown and replaced a second time."""
    bad = sorted({u.client_status for u in updates if u.client_status not in CLIENT_STATUSES})
    if bad:
        raise Invalid(f"unknown ClientStatus: {', '.join(bad)}")
    current = reads.allocs_by_id([u.id for u in updates])
    missing = [u.id for u in updates if u.id not in current]
    if missing:
        raise NotFound(f"unknown allocations: {', '.join(missing)}")
    statuses = reads.node_statuses(sorted({a.node_id for a in current.values()}))
    unresponsive = [(n, s) for n, s in sorted(statuses.items()) if s in UNRESPONSIVE]
    if unresponsive:
        raise Conflict(
            "\n".join(
                f"node {n} is not allowed to update allocs while in status {s}" for n, s in unresponsive
            )
        )
    triggers: dict[tuple[str, str], str] = {}
    for u in updates:
        a = current[u.id]
        key = (a.namespace, a.job_id)
        if a.client_status == "unknown":
            triggers.setdefault(key, TRIGGER_RECONNECT)
        elif a.server_terminal():
            continue
        elif u.client_status == "failed" and a.client_status != "failed":
            triggers[key] = TRIGGER_RETRY_FAILED_ALLOC
    evals = [
        job_eval(job, trigger, now)
        for (ns, jid), trigger in triggers.items()
        if (job := reads.job(ns, jid)) is not None and not job.stop
    ]
    return Change.of([AllocsClientUpdated(node_id=node_id, updates=updates)], evals)


@dataclass
class AllocRestartChange(Change):
    request_id: str = ""


def restart_alloc(
    reads: ClusterReads, alloc_id: str, task: str, all_tasks: bool, now: int
) -> AllocRestartChange:
    """Restart an alloc's tasks in place (Nomad's alloc restart): the named task, else the
    running ones, or with `all_tasks` every task. The node's agent acts on each request once."""
    if task and all_tasks:
        raise Invalid("Task name cannot be set when restarting all tasks")
    alloc = reads.allocs_by_id([alloc_id]).get(alloc_id)
    if alloc is None:
        raise NotFound("alloc not found")
    if alloc.terminal_status():
        raise Invalid(f"Alloc {alloc_id} is terminal ({alloc.desired_status}/{alloc.client_status})")
    job = reads.job_version(alloc.namespace, alloc.job_id, alloc.job_version)
    tg = job.lookup_task_group(alloc.task_group) if job is not None else None
    names = {t.name for t in tg.tasks} if tg is not None else set()
    if task and task not in names:
        raise Invalid(f'Unknown task "{task}" (alloc {alloc_id} has: {", ".join(sorted(names))})')
    if task:
        state = alloc.task_states.get(task)
        if state is None or state.state != "running":
            raise Invalid(f'Task "{task}" not running')
    elif not all_tasks and not any(ts.state == "running" for ts in alloc.task_states.values()):
        raise Invalid("No task is running")
    req = AllocRestartRequest(id=str(uuid.uuid4()), task_name=task, all_tasks=all_tasks, time=now)
    change = Change.of([AllocRestartRequested(alloc_id=alloc_id, request=req)])
    return AllocRestartChange(change.events, change.evals, req.id)


def stop(reads: ClusterReads, alloc_id: str, no_shutdown_delay: bool, now: int) -> Change:
    """Stop an alloc (Nomad's alloc stop): it is marked to migrate and its job gets an
    alloc-stop eval, so the scheduler stops it and places its replacement, as a drain would.
    `no_shutdown_delay`: its tasks skip their shutdown delay."""
    alloc = reads.allocs_by_id([alloc_id]).get(alloc_id)
    if alloc is None:
        raise NotFound("alloc not found")
    job = reads.job(alloc.namespace, alloc.job_id)
    if job is None:
        raise NotFound(f"job {alloc.job_id!r} of alloc {alloc_id} not found")
    eval_ = job_eval(job, TRIGGER_ALLOC_STOP, now, job_modify_index=job.modify_index)
    transition = DesiredTransition(migrate=True, no_shutdown_delay=no_shutdown_delay)
    return Change([NewEvent(AllocsTransitioned(transitions={alloc_id: transition}, evals=[eval_]))], [eval_])
