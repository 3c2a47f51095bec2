"""Which of a reconnecting alloc and one of its replacements keeps running: the group's
`disconnect.reconcile` option (Nomad's reconnecting picker).

- A replacement of a newer job version always wins.
- `keep_original` / `keep_replacement`: as named.
- `best_score`: the replacement wins when its placement scored higher (an alloc with no score
  loses to one with a score), unless it is not running while the original is.
- `longest_running`: the one whose leader task (else oldest task) last started earlier; one
  that never started loses; neither started: best_score.

Placement scores are the highest normalized score of the alloc's placement metrics; replicas
do not hold metrics, so a caller may hand them in by alloc ID (`reconnect_score_ids` names
the allocs whose scores a reconciliation may read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from drover.model import Allocation, TaskGroup
from drover.model.alloc import ALLOC_CLIENT_RUNNING

KEEP_ORIGINAL = "keep_original"
KEEP_REPLACEMENT = "keep_replacement"
LONGEST_RUNNING = "longest_running"

ScoreFn = Callable[[Allocation], float | None]


def placement_score(alloc: Allocation, scores: Mapping[str, float]) -> float | None:
    """The alloc's placement score: `scores[alloc.id]`, else the best normalized score of its
    metrics (Nomad's MaxNormScore); None when neither is known."""
    known = scores.get(alloc.id)
    if known is not None:
        return known
    meta = alloc.metrics.score_meta_data if alloc.metrics is not None else []
    return max((m.norm_score for m in meta), default=None)


def pick_reconnecting(
    reconcile: str, original: Allocation, replacement: Allocation, tg: TaskGroup | None, score: ScoreFn
) -> Allocation:
    """The alloc to keep of `original` (reconnecting) and one of its `replacement`s; `tg` is
    the original's task group (its tasks name the leader)."""
    if replacement.job_version > original.job_version:
        return replacement
    if reconcile == KEEP_ORIGINAL:
        return original
    if reconcile == KEEP_REPLACEMENT:
        return replacement
    if reconcile == LONGEST_RUNNING:
        return _longest_running(original, replacement, tg, score)
    return _best_score(original, replacement, score)


def _best_score(original: Allocation, replacement: Allocation, score: ScoreFn) -> Allocation:
    o, r = score(original), score(replacement)
    better = r is not None and (o is None or r > o)
    # Never trade a running original for a replacement that is not running.
    if better and (
        replacement.client_status == ALLOC_CLIENT_RUNNING or original.client_status != ALLOC_CLIENT_RUNNING
    ):
        return replacement
    return original


def _longest_running(
    original: Allocation, replacement: Allocation, tg: TaskGroup | None, score: ScoreFn
) -> Allocation:
    o, r = last_start(original, tg), last_start(replacement, tg)
    if not o and not r:
        return _best_score(original, replacement, score)
    if not r:
        return original
    if not o:
        return replacement
    return original if o < r else replacement


def last_start(alloc: Allocation, tg: TaskGroup | None) -> int:
    """When the alloc's leader task last (re)started, else the earliest last start among its
    tasks; 0 if none has started (Nomad's startOfLeaderOrOldestTaskInMain)."""
    if tg is None:
        return 0
    oldest = 0
    for task in tg.tasks:
        ts = alloc.task_states.get(task.name)
        started = 0 if ts is None else ts.last_restart if ts.restarts > 0 else ts.started_at
        if task.leader:
            return started
        if started and (not oldest or started < oldest):
            oldest = started
    return oldest


def replacement_chain(original: Allocation, group: Mapping[str, Allocation]) -> list[Allocation]:
    """The allocs that replaced `original`, one after the other (a replacement that failed was
    replaced in turn), as far as `group` holds them."""
    out: list[Allocation] = []
    seen = {original.id}
    nxt = group.get(original.next_allocation) if original.next_allocation else None
    while nxt is not None and nxt.id not in seen:
        out.append(nxt)
        seen.add(nxt.id)
        nxt = group.get(nxt.next_allocation) if nxt.next_allocation else None
    return out


def reconnect_score_ids(allocs: Iterable[Allocation]) -> set[str]:
    """The allocs of a job whose placement scores a best_score reconnect may compare: each
    alloc that has to reconnect, and its replacements."""
    allocs = list(allocs)
    # Most allocs never disconnected (no recorded states): one cheap pass, nearly always all.
    waiting = [a for a in allocs if a.alloc_states and a.needs_to_reconnect() and not a.server_terminal()]
    if not waiting:
        return set()
    by_id = {a.id: a for a in allocs}
    out: set[str] = set()
    for a in waiting:
        out.add(a.id)
        out.update(r.id for r in replacement_chain(a, by_id))
    return out
