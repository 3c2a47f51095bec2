"""Garbage collection, pure: what may leave the state now (Nomad's core scheduler,
nomad/core_sched.go), each pass a function of the state, `now` and the cutoffs. Ages are
times: an object may go once it last changed at or before its cutoff (now less the threshold;
a forced collection has none). What the passes find is collected by drover.control.leader.gccore.

- Eval (eval-gc): terminal and old (a batch job's evals by the batch threshold). It goes when
  every alloc it placed may go, and those allocs go with it; the allocs that may go go anyway.
  A batch job that is still registered and not stopped and dead keeps its current allocs (its
  scheduler would run them again): of its evals only the terminal allocs of older versions go,
  and an eval only with all of its allocs.
- Alloc: terminal, old, not running on its client; then any alloc of a job gone, stopped or
  dead, or desired stop, or not failed; a failed one only once it cannot be rescheduled any
  more (no policy, or replaced, or its last reschedule out of the policy's interval; never
  with unlimited rescheduling). A lost alloc of a group that does not replace lost allocs
  stays while its job runs. Allocs whose eval is gone go by these rules too.
- Job (job-gc): dead, and stopped or batch (a periodic or parameterized parent only once stopped), submitted
  before the cutoff, and every eval of it collectable by the job cutoff (batch evals too);
  its evals and allocs go with it.
- Deployment (deployment-gc): inactive, old, and no alloc that is not terminal belongs to it.
- Node (node-gc): down since before the cutoff, no alloc on it that is not terminal.
- Job restart (job-restart-gc, Drover's own): ended before the cutoff.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from drover.model import Allocation, Evaluation, Job
from drover.model.alloc import (
    ALLOC_CLIENT_FAILED,
    ALLOC_CLIENT_LOST,
    ALLOC_CLIENT_RUNNING,
    ALLOC_DESIRED_STOP,
)
from drover.model.job import JOB_STATUS_DEAD, JOB_TYPE_BATCH, derive_job_status
from drover.model.state import InMemoryState, JobKey

# A cutoff no time reaches: a forced collection takes everything that may go, whatever its age.
NO_CUTOFF = 2**63 - 1


@dataclass(frozen=True)
class Thresholds:
    """How long after its last change each kind of object is kept (ns; Nomad's defaults)."""

    eval: int
    batch_eval: int
    job: int
    deployment: int
    node: int
    restart: int


@dataclass(frozen=True)
class Cutoffs:
    """The latest change time of each kind that is old enough, at `now`."""

    now: int
    eval: int = NO_CUTOFF
    batch_eval: int = NO_CUTOFF
    job: int = NO_CUTOFF
    deployment: int = NO_CUTOFF
    node: int = NO_CUTOFF
    restart: int = NO_CUTOFF

    @classmethod
    def of(cls, now: int, t: Thresholds | None) -> Cutoffs:
        """At `now` with thresholds `t`; None: a forced collection (no age needed)."""
        if t is None:
            return cls(now)
        return cls(now, now - t.eval, now - t.batch_eval, now - t.job, now - t.deployment,
                   now - t.node, now - t.restart)  # fmt: skip


@dataclass
class Collection:
    """What a pass found, in the order it may go: an alloc before its eval, a job right after
    its evals (drover.control.leader.gccore keeps a job in the append of its last eval)."""

    # (kind, key) in order: ("alloc", id), ("eval", id), ("job", (ns, id)), ("deployment", id),
    # ("node", id), ("restart", (restart id, ns, job id)).
    items: list[tuple[str, object]] = field(default_factory=list)

    def add(self, kind: str, key: object) -> None:
        self.items.append((kind, key))

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.items if k == kind)


class View:
    """What the passes read of a state, grouped once per pass: evals by job, allocs by eval,
    and each job's derived status."""

    def __init__(self, state: InMemoryState) -> None:
        self.state = state
        self.evals_by_job: dict[JobKey, list[Evaluation]] = defaultdict(list)
        for e in sorted(state.evals.values(), key=lambda e: e.create_index):
            self.evals_by_job[(e.namespace, e.job_id)].append(e)
        self.allocs_by_eval: dict[str, list[Allocation]] = defaultdict(list)
        for a in state.allocs.values():
            self.allocs_by_eval[a.eval_id].append(a)
        self._dead: dict[JobKey, bool] = {}

    def dead(self, job: Job) -> bool:
        """Whether the job's status is dead (derived as the API derives it)."""
        key = (job.namespace, job.id)
        if key not in self._dead:
            allocs = self.state.allocs_by_job(*key)
            evals = self.evals_by_job.get(key, [])
            status = derive_job_status(
                job,
                has_allocs=bool(allocs),
                live_allocs=any(not a.terminal_status() for a in allocs),
                has_evals=bool(evals),
                live_evals=any(not e.terminal_status() for e in evals),
            )
            self._dead[key] = status == JOB_STATUS_DEAD
        return self._dead[key]


def alloc_gc_eligible(a: Allocation, job: Job | None, dead: bool, now: int, cutoff: int) -> bool:
    """Whether alloc `a` of `job` (None: gone; `dead`: its status) may go (Nomad's
    allocGCEligible, with times for indexes)."""
    if not a.terminal_status() or a.modify_time > cutoff or a.client_status == ALLOC_CLIENT_RUNNING:
        return False
    tg = job.lookup_task_group(a.task_group) if job is not None else None
    if job is None or tg is None:
        return True
    replaces_lost = tg.disconnect is None or tg.disconnect.replace
    if not job.stop and not replaces_lost and a.client_status == ALLOC_CLIENT_LOST:
        return False
    if job.stop or dead or a.desired_status == ALLOC_DESIRED_STOP or a.client_status != ALLOC_CLIENT_FAILED:
        return True
    policy = tg.reschedule_policy
    if policy is None or not policy.enabled() or a.next_allocation:
        return True
    if policy.unlimited:
        return False  # it is rescheduled until it is replaced
    events = a.reschedule_tracker.events if a.reschedule_tracker is not None else []
    # None yet: it may be rescheduled; else once its last one is out of the interval.
    return bool(events) and now - events[-1].reschedule_time > policy.interval


def gc_eval(
    view: View, eval_: Evaluation, cutoff: int, allow_batch: bool, now: int
) -> tuple[bool, list[str]]:
    """Whether eval `eval_` may go, and which of its allocs may (Nomad's gcEval)."""
    if not eval_.terminal_status() or eval_.modify_time > cutoff:
        return False, []
    job = view.state.job(eval_.namespace, eval_.job_id)
    allocs = view.allocs_by_eval.get(eval_.id, [])
    dead = job is not None and view.dead(job)
    if eval_.type == JOB_TYPE_BATCH and job is not None and not (dead and (job.stop or allow_batch)):
        # A batch job still there keeps its current allocs: only older versions' terminal ones.
        old = [
            a.id
            for a in allocs
            if a.create_index < job.job_modify_index and a.modify_time <= cutoff and a.terminal_status()
        ]
        return len(old) == len(allocs), old
    ids = [a.id for a in allocs if alloc_gc_eligible(a, job, dead, now, cutoff)]
    return len(ids) == len(allocs), ids


def eval_gc(state: InMemoryState, cutoffs: Cutoffs) -> Collection:
    """The eval-gc pass: old terminal evals with their allocs, and the allocs that may go."""
    view = View(state)
    out = Collection()
    for eval_ in sorted(state.evals.values(), key=lambda e: e.create_index):
        cutoff = cutoffs.batch_eval if eval_.type == JOB_TYPE_BATCH else cutoffs.eval
        gc, ids = gc_eval(view, eval_, cutoff, False, cutoffs.now)
        out.items += [("alloc", a) for a in ids]
        if gc:
            out.add("eval", eval_.id)
    # Allocs whose eval is gone are found by no eval: the same rules, by themselves.
    for eval_id, allocs in view.allocs_by_eval.items():
        if eval_id in state.evals:
            continue
        for a in allocs:
            job = state.job(a.namespace, a.job_id)
            dead = job is not None and view.dead(job)
            if alloc_gc_eligible(a, job, dead, cutoffs.now, cutoffs.eval):
                out.add("alloc", a.id)
    return out


def job_gcable(job: Job, dead: bool) -> bool:
    """Whether a job may be collected at all (Nomad's JobsByGC): a periodic or parameterized
    parent only once stopped; any other once dead, and stopped or a batch job (which ends by
    itself)."""
    if (job.periodic is not None and job.periodic.enabled) or job.is_parameterized():
        return job.stop
    return dead and (job.stop or job.is_batch())


def job_gc(state: InMemoryState, cutoffs: Cutoffs) -> Collection:
    """The job-gc pass: dead jobs whose every eval may go, with their evals and allocs."""
    view = View(state)
    out = Collection()
    for key in sorted(state.jobs):
        job = state.jobs[key]
        if job.submit_time > cutoffs.job or not job_gcable(job, view.dead(job)):
            continue
        found = Collection()
        for eval_ in view.evals_by_job.get(key, []):
            gc, allocs = gc_eval(view, eval_, cutoffs.job, True, cutoffs.now)
            if not gc:
                break
            found.items += [("alloc", a) for a in allocs]
            found.add("eval", eval_.id)
        else:
            out.items += found.items
            out.add("job", key)
    return out


def deployment_gc(state: InMemoryState, cutoffs: Cutoffs) -> Collection:
    """The deployment-gc pass: old inactive deployments no live alloc belongs to."""
    live = {a.deployment_id for a in state.allocs.values() if a.deployment_id and not a.terminal_status()}
    out = Collection()
    for d in sorted(state.deployments.values(), key=lambda d: d.create_index):
        if not d.active() and d.modify_time <= cutoffs.deployment and d.id not in live:
            out.add("deployment", d.id)
    return out


def node_gc(state: InMemoryState, cutoffs: Cutoffs) -> Collection:
    """The node-gc pass: nodes down since before the cutoff with no live alloc on them."""
    out = Collection()
    for node_id in sorted(state.nodes):
        n = state.nodes[node_id]
        if not n.terminal_status() or n.status_updated_at > cutoffs.node:
            continue
        if all(a.terminal_status() for a in state.allocs_by_node(node_id)):
            out.add("node", node_id)
    return out


def restart_gc(state: InMemoryState, cutoffs: Cutoffs) -> Collection:
    """The job-restart-gc pass: restarts that ended before the cutoff."""
    out = Collection()
    for r in sorted(state.job_restarts.values(), key=lambda r: r.create_index):
        if r.terminal() and r.updated_at <= cutoffs.restart:
            out.add("restart", (r.id, r.namespace, r.job_id))
    return out
