"""The node drainer's rules, pure: which allocs of a draining node to migrate now, and when the
drain is done (Nomad's drainer).

- Allocs move in batches per task group: at most the group's migrate.max_parallel are in
  flight at once - marked to migrate but not yet stopped, or replaced by an alloc that is not
  yet running.
- At the drain's deadline (ForceDeadline) every remaining alloc is marked at once.
- System-job allocs stay until everything else has left (they serve the others), and are left
  alone with IgnoreSystemJobs.
- The drain is complete when no alloc it must move is left on the node: the drain strategy is
  cleared and the node stays ineligible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model.alloc import ALLOC_CLIENT_RUNNING, Allocation
from drover.model.evaluation import TRIGGER_NODE_DRAIN, Evaluation, job_eval
from drover.model.job import Job
from drover.model.node import Node
from drover.model.state import StateSnapshot


@dataclass
class DrainStep:
    migrate: list[Allocation] = field(default_factory=list)
    evals: list[Evaluation] = field(default_factory=list)
    done: bool = False


def _max_parallel(job: Job | None, tg_name: str) -> int:
    tg = job.lookup_task_group(tg_name) if job is not None else None
    mp = tg.migrate.max_parallel if tg is not None and tg.migrate is not None else 1
    return max(1, mp)


def drain_step(state: StateSnapshot, node: Node, now: int) -> DrainStep:
    out = DrainStep()
    strategy = node.drain_strategy
    if strategy is None:
        return out
    live = [a for a in state.allocs_by_node(node.id) if not a.terminal_status()]
    jobs = {(a.namespace, a.job_id): state.job(a.namespace, a.job_id) for a in live}

    def is_system(a: Allocation) -> bool:
        job = jobs.get((a.namespace, a.job_id))
        return job is not None and job.is_system()

    services = [a for a in live if not is_system(a)]
    system = [] if strategy.drain_spec.ignore_system_jobs else [a for a in live if is_system(a)]
    if not services and not system:
        out.done = True
        return out
    forced = strategy.force_deadline > 0 and now >= strategy.force_deadline
    candidates = services or system
    if forced:
        out.migrate = [a for a in services + system if not a.desired_transition.should_migrate()]
    else:
        by_group: dict[tuple[str, str, str], list[Allocation]] = {}
        for a in candidates:
            by_group.setdefault((a.namespace, a.job_id, a.task_group), []).append(a)
        for (ns, job_id, tg), allocs in sorted(by_group.items()):
            in_flight = sum(1 for a in allocs if a.desired_transition.should_migrate())
            # Replacements of allocs that already left this node, not yet running elsewhere.
            for other in state.allocs_by_job(ns, job_id):
                if other.task_group != tg or other.node_id == node.id or other.terminal_status():
                    continue
                prev = state.alloc(other.previous_allocation) if other.previous_allocation else None
                if (
                    prev is not None
                    and prev.node_id == node.id
                    and other.client_status != ALLOC_CLIENT_RUNNING
                ):
                    in_flight += 1
            room = _max_parallel(jobs.get((ns, job_id)), tg) - in_flight
            waiting = sorted(
                (a for a in allocs if not a.desired_transition.should_migrate()), key=lambda a: a.name
            )
            out.migrate.extend(waiting[: max(0, room)])
    keys = {(a.namespace, a.job_id) for a in out.migrate}
    for ns, job_id in sorted(keys):
        job = jobs.get((ns, job_id))
        if job is None:
            continue
        out.evals.append(job_eval(job, TRIGGER_NODE_DRAIN, now, node_id=node.id))
    return out
