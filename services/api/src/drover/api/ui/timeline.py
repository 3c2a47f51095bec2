"""A job's "what happened and why": its logged events, its evals and its failed allocs told as
sentences, the newest first, each with the time, a link to its object, and where it stands in
the log (its position: what pages the timeline, "older" being a page before a position).

Pure: the reads are the caller's (drover.runtime.store.timelinereads)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from drover.model import Allocation, Evaluation
from drover.model.alloc import AllocMetric
from drover.model.events import (
    DeploymentUpdated,
    DeploymentUpserted,
    Event,
    JobDeregistered,
    JobRegistered,
    JobRestartSignaled,
    JobRestartStarted,
    JobRestartUpdated,
    JobStabilityUpdated,
    PlanApplied,
    ScalingEventRegistered,
)
from drover.model.jobrestart import RESTART_RUNNING
from drover.runtime.store.timelinereads import LoggedEvent

# What a trigger means, in plain words (Nomad's TriggeredBy values).
TRIGGERS = {
    "job-register": "the job was registered",
    "job-deregister": "the job was stopped",
    "periodic-job": "its periodic launch",
    "node-drain": "a client draining",
    "node-update": "a client's status changing",
    "alloc-stop": "an allocation stopped",
    "scheduled": "its scheduled time",
    "rolling-update": "the rolling update going on",
    "deployment-watcher": "its deployment moving on",
    "failed-follow-up": "an earlier evaluation failing",
    "max-plan-attempts": "too many plan attempts",
    "alloc-failure": "an allocation failing (reschedule)",
    "queued-allocs": "capacity freeing up for allocations waiting",
    "preemption": "its allocations being preempted",
    "job-scaling": "the job being scaled",
    "max-disconnect-timeout": "a client disconnected too long",
    "reconnect": "a client reconnecting",
}


@dataclass
class Entry:
    position: int
    time: int  # Unix nanoseconds (0: not known)
    kind: str  # job, eval, placement, failure, reschedule, deployment, restart
    text: str
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, href)


@dataclass
class Timeline:
    entries: list[Entry]
    older: int  # the position an "older" page ends before (0: none)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _ns(dt: object) -> int:
    ts = getattr(dt, "timestamp", None)
    return int(ts() * 1e9) if ts else 0


def _alloc_link(alloc_id: str) -> tuple[str, str]:
    return (alloc_id[:8], f"/ui/allocations/{alloc_id}")


def _node_link(node_id: str, names: dict[str, str]) -> tuple[str, str]:
    return (names.get(node_id) or node_id[:8], f"/ui/nodes/{node_id}")


def failure_reasons(m: AllocMetric) -> list[str]:
    """Why clients could not take a group, from its placement metrics."""
    out = [f"{plural(n, 'client')} filtered by {why}" for why, n in sorted(m.constraint_filtered.items())]
    out += [f"{plural(n, 'client')} of class {cls} filtered" for cls, n in sorted(m.class_filtered.items())]
    out += [f"{plural(n, 'client')} out of {dim}" for dim, n in sorted(m.dimension_exhausted.items())]
    if not m.nodes_in_pool:
        out.append("no client in the job's node pool and datacenters")
    return out or [f"{plural(m.nodes_evaluated, 'client')} evaluated, none could take it"]


def _eval_entries(e: Evaluation) -> list[Entry]:
    why = TRIGGERS.get(e.triggered_by, e.triggered_by)
    outcome = e.status + (f" ({e.status_description})" if e.status_description else "")
    link = [(f"evaluation {e.id[:8]}", "#f-evaluations")]
    out = [Entry(e.create_index, e.create_time, "eval",
                 f"Evaluation triggered by {why} [{e.triggered_by}]: {outcome}.", link)]  # fmt: skip
    for group, m in sorted(e.failed_tg_allocs.items()):
        n = m.coalesced_failures + 1
        text = f"Could not place {plural(n, 'allocation')} of group {group}: {'; '.join(failure_reasons(m))}."
        out.append(Entry(e.modify_index, e.modify_time, "failure", text, link))
    return out


def _last_event(a: Allocation) -> str:
    """The newest task event that says why (a failure's message), task named."""
    found: tuple[int, str] = (0, "")
    for name, ts in a.task_states.items():
        for ev in ts.events:
            msg = ev.display_message or ev.message or ev.details.get("fails_task", "")
            if msg and ev.time >= found[0]:
                found = (ev.time, f"task {name}: {ev.type}, {msg}")
    return found[1]


def _alloc_entries(allocs: Sequence[Allocation], names: dict[str, str]) -> list[Entry]:
    """Failed, lost and restarted allocs, those alike at one position told together (a client
    lost loses all its allocs at once)."""
    told: dict[tuple[int, str, str], list[Allocation]] = {}
    for a in allocs:
        restarts = sum(ts.restarts for ts in a.task_states.values())
        if a.client_status in ("failed", "lost"):
            why = _last_event(a) or a.client_description or a.desired_description
            told.setdefault((a.modify_index, a.client_status, why), []).append(a)
        elif restarts:
            told.setdefault((a.modify_index, "restarted", ""), []).append(a)
    out = []
    for (position, status, why), group in told.items():
        a = group[0]
        links = [_alloc_link(x.id) for x in group[:5]]
        if a.node_id and len({x.node_id for x in group}) == 1:
            links.append(_node_link(a.node_id, names))
        who = f"Allocation {a.name}" if len(group) == 1 else plural(len(group), "allocation")
        if status == "restarted":
            n = sum(ts.restarts for x in group for ts in x.task_states.values())
            text = f"{who} restarted tasks in place ({plural(n, 'restart')} in all)."
            out.append(Entry(position, a.modify_time, "restart", text, links))
            continue
        text = f"{who} {status}" + (f": {why}" if why else "") + "."
        if any(x.next_allocation for x in group):
            text += " Rescheduled."
        out.append(Entry(position, a.modify_time, "failure", text, links))
    return out


def _placements(p: PlanApplied, at: int, names: dict[str, str], position: int) -> list[Entry]:
    out: list[Entry] = []
    fresh = [a for a in p.allocs if a.create_index == 0]
    placed = [a for a in fresh if not a.previous_allocation]
    for group in sorted({a.task_group for a in placed}):
        mine = [a for a in placed if a.task_group == group]
        by_node = Counter(a.node_id for a in mine)
        where = ", ".join(f"{n} on {names.get(node) or node[:8]}" for node, n in by_node.most_common())
        links = [_node_link(node, names) for node in by_node][:5]
        out.append(Entry(position, at, "placement",
                         f"Placed {plural(len(mine), 'allocation')} of group {group}: {where}.", links))  # fmt: skip
    for a in fresh:
        if a.previous_allocation:
            attempts = len(a.reschedule_tracker.events) if a.reschedule_tracker else 0
            text = (f"Rescheduled allocation {a.previous_allocation[:8]} as {a.id[:8]} on "
                    f"{names.get(a.node_id) or a.node_id[:8]}" + (f" (attempt {attempts})" if attempts else "") + ".")  # fmt: skip
            out.append(Entry(position, at, "reschedule", text,
                             [_alloc_link(a.previous_allocation), _alloc_link(a.id)]))  # fmt: skip
    updated = len(p.allocs) - len(fresh)
    if updated:
        out.append(Entry(position, at, "placement", f"Updated {plural(updated, 'allocation')} in place."))
    for verb, gone in (("Stopped", p.stopped), ("Preempted", p.preempted)):
        if gone:
            why = Counter(a.desired_description for a in gone if a.desired_description).most_common(1)
            text = f"{verb} {plural(len(gone), 'allocation')}" + (f": {why[0][0]}" if why else "") + "."
            out.append(Entry(position, at, "stop", text, [_alloc_link(a.id) for a in gone][:5]))
    if p.deployment is not None:
        d = p.deployment
        out.append(Entry(position, at, "deployment",
                         f"Deployment started for version {d.job_version}.", [(f"deployment {d.id[:8]}", "#f-deployment")]))  # fmt: skip
    for u in p.deployment_updates:
        dep = str(u.get("DeploymentID", ""))
        text = (
            f"Deployment {u.get('Status', 'updated')}"
            + (f": {u['StatusDescription']}" if u.get("StatusDescription") else "")
            + "."
        )
        out.append(Entry(position, at, "deployment", text, [(f"deployment {dep[:8]}", "#f-deployment")]))
    return out


def _restart_text(e: Event) -> str:
    if isinstance(e, JobRestartStarted):
        r = e.restart
        how = "replacing each allocation (reschedule)" if r.reschedule else "restarting tasks in place"
        wait = f", {r.batch_wait / 1e9:g}s between batches" if r.batch_wait else ""
        scope = f" of group {', '.join(r.groups)}" if r.groups else ""
        return f"Job restart{scope} started: batches of {r.batch_size}{wait}, {how}."
    if isinstance(e, JobRestartSignaled):
        return f"Job restart batch {e.batch_number}: {plural(len(e.alloc_ids()), 'allocation')} signalled."
    assert isinstance(e, JobRestartUpdated)
    if e.status:
        verb = "resumed" if e.status == RESTART_RUNNING else e.status
        return f"Job restart {verb}" + (f": {e.status_description}" if e.status_description else "") + "."
    return "Job restart batch done."


def _logged(rec: LoggedEvent, names: dict[str, str]) -> list[Entry]:
    e, pos, at = rec.event, rec.position, _ns(rec.recorded_at)
    if isinstance(e, JobRegistered):
        j = e.job
        what = "stopped" if j.stop else f"{plural(sum(g.count for g in j.task_groups), 'allocation')} wanted"
        return [
            Entry(pos, at, "job", f"Version {j.version} registered ({what}).", [("versions", "#f-versions")])
        ]
    if isinstance(e, JobDeregistered):
        return [Entry(pos, at, "job", "Job purged." if e.purge else "Job stopped.")]
    if isinstance(e, JobStabilityUpdated):
        return [Entry(pos, at, "job", f"Version {e.version} marked {'stable' if e.stable else 'unstable'}.")]
    if isinstance(e, ScalingEventRegistered):
        s = e.event
        change = f"from {s.previous_count} to {s.count}" if s.count is not None else "reported"
        return [
            Entry(
                pos,
                at,
                "job",
                f"Group {e.task_group} scaled {change}" + (f": {s.message}" if s.message else "") + ".",
            )
        ]
    if isinstance(e, PlanApplied):
        return _placements(e, e.at or at, names, pos)
    if isinstance(e, DeploymentUpserted):
        d = e.deployment
        return [Entry(pos, at, "deployment", f"Deployment {d.status}" + (f": {d.status_description}" if d.status_description else "") + ".",
                      [(f"deployment {d.id[:8]}", "#f-deployment")])]  # fmt: skip
    if isinstance(e, DeploymentUpdated):
        text = (
            "Deployment promoted" + (f" ({', '.join(e.promote_groups)})" if e.promote_groups else "")
            if e.promote
            else f"Deployment {e.status or 'updated'}"
        )
        text += f": {e.status_description}." if e.status_description else "."
        return [
            Entry(
                pos, e.at or at, "deployment", text, [(f"deployment {e.deployment_id[:8]}", "#f-deployment")]
            )
        ]
    if isinstance(e, (JobRestartStarted, JobRestartSignaled, JobRestartUpdated)):
        return [
            Entry(pos, getattr(e, "at", 0) or at, "restart", _restart_text(e), [("restart", "#f-restart")])
        ]
    return []


def build(
    logged: Sequence[LoggedEvent], evals: Sequence[Evaluation], allocs: Sequence[Allocation],
    names: dict[str, str], before: int, limit: int, floor: int = 0,
) -> Timeline:  # fmt: skip
    """The page of at most `limit` positions before `before` (0: the newest). The sources were
    each read `limit` deep before it; `floor` is the highest position a source that had more
    stopped at (its rows at or below it were not all read): the page ends above it. `names`:
    the clients' names by ID."""
    entries: list[Entry] = []
    for rec in logged:
        entries += _logged(rec, names)
    for e in evals:
        entries += _eval_entries(e)
    entries += _alloc_entries(allocs, names)
    entries = [x for x in entries if (not before or x.position < before) and x.position > floor]
    entries.sort(key=lambda x: x.position, reverse=True)  # stable: a position's entries keep their order
    positions = sorted({x.position for x in entries}, reverse=True)
    if len(positions) > limit:
        last = positions[limit - 1]
        return Timeline([x for x in entries if x.position >= last], last)
    return Timeline(entries, floor + 1 if floor else 0)
