"""The garbage collector's core evals, pure: which to write every gc_interval, what each one's
passes find (drover.control.leader.gc), the events that collect it - in appends of at most `size`
objects, so that no append holds the events lock long (bench/gc.py, docs/experiments/garbage-collection.md) -
and the eval done.

A pass is decided from one state, and the reducer collects an object only if it is still what
the pass saw (drover.model.gcreducer), so its appends may land while the cluster moves on. A
core eval stays pending until the collector has appended all of its pass and completes it; a
collector that stops midway leaves it pending, and the next leader runs it again from the
start: what went is gone from its state, the rest is found again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from drover.control.leader.gc import (
    Collection,
    Cutoffs,
    Thresholds,
    deployment_gc,
    eval_gc,
    job_gc,
    node_gc,
    restart_gc,
)
from drover.model.evaluation import (
    CORE_JOB_DEPLOYMENT_GC,
    CORE_JOB_EVAL_GC,
    CORE_JOB_FORCE_GC,
    CORE_JOB_JOB_GC,
    CORE_JOB_NODE_GC,
    CORE_JOB_RESTART_GC,
    EVAL_STATUS_COMPLETE,
    EVAL_STATUS_FAILED,
    EVAL_TYPE_CORE,
    Evaluation,
    core_eval,
)
from drover.model.events import (
    DeploymentsCollected,
    EvalsCollected,
    Event,
    JobCollected,
    JobRestartDeleted,
    NodesCollected,
)
from drover.model.state import InMemoryState

PASSES: dict[str, Callable[[InMemoryState, Cutoffs], Collection]] = {
    CORE_JOB_JOB_GC: job_gc,
    CORE_JOB_EVAL_GC: eval_gc,
    CORE_JOB_DEPLOYMENT_GC: deployment_gc,
    CORE_JOB_RESTART_GC: restart_gc,
    CORE_JOB_NODE_GC: node_gc,
}
# The core evals written every gc_interval (Nomad's leader schedules each of its own).
PERIODIC = (CORE_JOB_EVAL_GC, CORE_JOB_JOB_GC, CORE_JOB_DEPLOYMENT_GC, CORE_JOB_NODE_GC, CORE_JOB_RESTART_GC)
# A forced collection runs every pass in this order: nodes last, once their allocs are gone
# (Nomad's forceGC).
FORCE_ORDER = tuple(PASSES)
DESC_UNKNOWN = "core scheduler cannot handle job '{}'"


def passes(core_job: str) -> list[str]:
    """The passes core eval JobID `core_job` runs (none for a JobID it does not know)."""
    if core_job == CORE_JOB_FORCE_GC:
        return list(FORCE_ORDER)
    return [core_job] if core_job in PASSES else []


def find(state: InMemoryState, core: Evaluation, name: str, now: int, thresholds: Thresholds) -> Collection:
    """What pass `name` of core eval `core` finds in `state` at `now`: with no age needed when
    the collection was forced."""
    forced = core.job_id == CORE_JOB_FORCE_GC
    return PASSES[name](state, Cutoffs.of(now, None if forced else thresholds))


def chunks(found: Collection, as_of: int, size: int) -> list[list[Event]]:
    """The events that collect `found` (decided at log position `as_of`), one list per append,
    each of at most `size` objects - but for a job, which goes in the append of its last eval,
    so that no job is left without its evals and allocs and yet registered."""
    out: list[list[Event]] = []
    cur: list[tuple[str, object]] = []
    for kind, key in found.items:
        follows_its_evals = kind == "job" and bool(cur) and cur[-1][0] != "job"
        if len(cur) >= size and not follows_its_evals:
            out.append(_events(cur, as_of))
            cur = []
        cur.append((kind, key))
    if cur:
        out.append(_events(cur, as_of))
    return out


def _events(items: list[tuple[str, object]], as_of: int) -> list[Event]:
    keys: dict[str, list[object]] = {}
    for kind, key in items:
        keys.setdefault(kind, []).append(key)
    events: list[Event] = []
    allocs, evals = keys.get("alloc", []), keys.get("eval", [])
    if allocs or evals:
        events.append(EvalsCollected(evals=[str(e) for e in evals], allocs=[str(a) for a in allocs]))
    if deployments := keys.get("deployment"):
        events.append(DeploymentsCollected(deployments=[str(d) for d in deployments]))
    if nodes := keys.get("node"):
        events.append(NodesCollected(nodes=[str(n) for n in nodes], as_of=as_of))
    for key in keys.get("job", []):
        assert isinstance(key, tuple)
        events.append(JobCollected(namespace=key[0], job_id=key[1], as_of=as_of))
    for key in keys.get("restart", []):
        assert isinstance(key, tuple)
        events.append(JobRestartDeleted(restart_id=key[0], namespace=key[1], job_id=key[2]))
    return events


def latest(core_evals: Iterable[Evaluation], seen: dict[str, int] | None = None) -> dict[str, int]:
    """When the newest core eval of each JobID was created, of `core_evals` and what `seen`
    already holds (collected core evals still count: the schedule does not restart when eval
    GC takes them)."""
    out = dict(seen or {})
    for e in core_evals:
        if e.type == EVAL_TYPE_CORE:
            out[e.job_id] = max(out.get(e.job_id, 0), e.create_time)
    return out


def due(
    core_evals: Iterable[Evaluation], last: dict[str, int], now: int, interval: int, since: int
) -> list[Evaluation]:
    """The periodic core evals to write at `now`: each one whose last was created `interval`
    ago or more (`last`: `latest`; none yet: since `since`, when this collector began to lead)
    and that has none pending among `core_evals`."""
    pending = {e.job_id for e in core_evals if e.type == EVAL_TYPE_CORE and not e.terminal_status()}
    return [
        core_eval(job_id, now)
        for job_id in PERIODIC
        if job_id not in pending and now >= last.get(job_id, since) + interval
    ]


def finished(core: Evaluation, now: int) -> Evaluation:
    """Core eval `core` done: complete, or failed when its JobID names no pass."""
    if passes(core.job_id):
        return core.model_copy(update={"status": EVAL_STATUS_COMPLETE, "modify_time": now})
    desc = DESC_UNKNOWN.format(core.job_id)
    return core.model_copy(
        update={"status": EVAL_STATUS_FAILED, "status_description": desc, "modify_time": now}
    )
