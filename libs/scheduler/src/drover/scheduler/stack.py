"""Placement: feasibility, then ranking, then the choice of a node for one alloc.

Over the eval's `NodeTable` (the candidate nodes as columns, see `nodetable`), `GroupStack`
selects nodes for one task group: the static feasibility (constraints, drivers) is computed once per group with the computed-class
cache, and per placement only resource fit, distinct_* and scores are evaluated, vectorized.

Candidates are visited in a random order (seeded from the eval). With Nomad's limit
(`NodeScoring = limit`, the default under the spread algorithm) only a window of them is scored:
batch 2, service max(2, ceil(log2 n)). With `NodeScoring = all` (the default under binpack)
every feasible node is scored and the best wins, the first in the visiting order among equals,
as Nomad's max-score iterator breaks ties. Groups with spread or affinity score max(count, the
configuration's node limit, 100 by default) either way; `full_scan=True` scores every feasible
node for every group. The fit stage is the configuration's algorithm: binpack or spread.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from drover.model import Allocation, AllocMetric, Job, Node, NodeScoreMeta, Spread, TaskGroup
from drover.model.base import copy_with
from drover.model.job import CONSTRAINT_DISTINCT_HOSTS
from drover.model.network import AllocatedPortMapping
from drover.model.schedulerconfig import (
    DEFAULT_SCHEDULER_CONFIGURATION,
    SCHEDULER_ALGORITHM_SPREAD,
    SchedulerConfiguration,
)
from drover.scheduler.constraints import is_escaped, matches, resolve_target
from drover.scheduler.failure import failure_metric
from drover.scheduler.feasible import FeasibilityChecker, distinct_constraints
from drover.scheduler.groupports import GroupPorts
from drover.scheduler.nodetable import NodeTable
from drover.scheduler.rank import (
    MAX_SKIP,
    SKIP_SCORE_THRESHOLD,
    BoolArray,
    FloatArray,
    IntArray,
    ScoreBreakdown,
    anti_affinity_scores,
    fit_functions,
    limit_window,
    limit_window_array,
)
from drover.scheduler.spread import SpreadState, build_spread

# At most this many changed rows are refreshed one by one (GroupStack._refresh_row); more go
# through the vector path.
_SCALAR_ROWS = 8
# Limit windows of at most this many candidates are chosen in plain Python (GroupStack._choose).
_SCALAR_WINDOW = 64


@dataclass
class SelectOptions:
    penalty_nodes: set[str] = field(default_factory=set)
    preferred_nodes: list[str] = field(default_factory=list)


@dataclass
class Selection:
    node: Node
    row: int
    scores: dict[str, float]
    norm_score: float
    nodes_evaluated: int


class GroupStack:
    """Selects nodes for the allocs of one task group within one eval."""

    def __init__(
        self,
        table: NodeTable,
        order: IntArray,
        job: Job,
        tg: TaskGroup,
        checker: FeasibilityChecker,
        job_allocs: Iterable[Allocation],
        batch: bool,
        full_scan: bool = False,
        config: SchedulerConfiguration = DEFAULT_SCHEDULER_CONFIGURATION,
    ) -> None:
        self.table = table
        self.order = order
        self.offset = 0
        self.job = job
        self.tg = tg
        self.batch = batch
        self.config = config
        self._fit_scores, self._fit_score = fit_functions(
            config.effective_algorithm() == SCHEDULER_ALGORITHM_SPREAD
        )
        n = len(table)
        if table.class_rows is not None:
            feas = checker.check_rows(tg, table.nodes, table.class_rows)
            assert feas.mask is not None
            self.feasible: BoolArray = feas.mask
        else:
            feas = checker.check(tg, table.nodes)
            feasible_ids = {nd.id for nd in feas.nodes}
            self.feasible = np.array([nd.id in feasible_ids for nd in table.nodes], dtype=bool)
        self.feasible_set = feas
        ask = tg.combined_resources()
        self.ask_cpu, self.ask_mem, self.ask_disk = float(ask.cpu), float(ask.memory_mb), float(ask.disk_mb)

        live = [a for a in job_allocs if not a.terminal_status()]
        self._count_live(live)
        self._init_distinct(live)
        self._init_affinity()
        self._init_spreads(live)

        self.ports = GroupPorts(table, tg, f"{job.id}/{tg.name}/{order[:8].tolist()}")

        self.limit = self._limit(int(self.feasible.sum()))
        # Every feasible node scored: forced (full_scan), or by the configuration for a group
        # without spread or affinity (those keep their node limit).
        self.every = full_scan or (config.scores_every_node() and not (self.has_affinity or self.spreads))
        # Per-row caches refreshed from the table's change log: fit mask, fit score (binpack's
        # or spread's) and anti-affinity score of placing one more alloc of this group on the row.
        self._fits: BoolArray = np.zeros(n, dtype=bool)
        self._binpack: FloatArray = np.zeros(n)
        self._anti: FloatArray = np.zeros(n)
        self._seen = -1
        # Scoring every node of a group without spread or affinity: each node's final score
        # (-inf where it does not fit) kept in visiting order, refreshed with the caches above,
        # so a placement is one argmax (the first best in that order) over the whole table.
        self._by_visit = self.every and not (self.has_affinity or self.spreads)
        self._visit_pos: IntArray = np.empty(n, dtype=np.int64)
        self._visit_pos[order] = np.arange(len(order), dtype=np.int64)
        self._visit_scores: FloatArray = np.full(len(order), -np.inf)

    def _count_live(self, live: list[Allocation]) -> None:
        """Proposed allocs of this job (per node) and of this group (per node): existing live
        allocs now, placements and stops applied as the plan grows."""
        table, n = self.table, len(self.table)
        self.tg_count: IntArray = np.zeros(n, dtype=np.int64)
        self.job_count: IntArray = np.zeros(n, dtype=np.int64)
        for a in live:
            i = table.row.get(a.node_id)
            if i is None:
                continue
            self.job_count[i] += 1
            if a.task_group == self.tg.name:
                self.tg_count[i] += 1

    def _init_distinct(self, live: list[Allocation]) -> None:
        """distinct_hosts and distinct_property, job and group level."""
        job, tg, table = self.job, self.tg, self.table
        self.distinct_hosts_job = False
        self.distinct_hosts_group = False
        self.distinct_props: list[tuple[SpreadState, int]] = []
        for c in distinct_constraints(job, tg):
            job_level = c in job.constraints
            if c.operand == CONSTRAINT_DISTINCT_HOSTS:
                if c.rtarget in ("", "true"):
                    if job_level:
                        self.distinct_hosts_job = True
                    else:
                        self.distinct_hosts_group = True
            else:
                allowed = int(c.rtarget) if c.rtarget.strip().isdigit() else 1
                initial: dict[str, int] = {}
                for a in live:
                    if not job_level and a.task_group != tg.name:
                        continue
                    nd = table.nodes[table.row[a.node_id]] if a.node_id in table.row else None
                    if nd is None:
                        continue
                    v, ok = resolve_target(c.ltarget, nd)
                    if ok:
                        initial[v] = initial.get(v, 0) + 1
                st = build_spread(Spread(attribute=c.ltarget), 0, table.values(c.ltarget), initial)
                self.distinct_props.append((st, allowed))

    def _init_affinity(self) -> None:
        """Node affinity: static per node, computed once per computed class unless escaped."""
        job, tg, table = self.job, self.tg, self.table
        affinities = list(job.affinities) + list(tg.affinities) + [a for t in tg.tasks for a in t.affinities]
        self.has_affinity = bool(affinities)
        self.affinity: FloatArray = np.zeros(len(table))
        if affinities:
            total_w = sum(abs(a.weight) for a in affinities) or 1
            cache: dict[str, float] = {}
            escaped = is_escaped(affinities)
            for i, nd in enumerate(table.nodes):
                key = nd.computed_class
                if key in cache and not escaped:
                    self.affinity[i] = cache[key]
                    continue
                s = sum(a.weight for a in affinities if matches(a, nd)) / total_w
                cache[key] = s
                self.affinity[i] = s

    def _init_spreads(self, live: list[Allocation]) -> None:
        """Spread: job-level blocks apply to every group (as in Nomad); counts are per group."""
        job, tg, table = self.job, self.tg, self.table
        spreads = list(tg.spreads) + list(job.spreads)
        self.spreads: list[SpreadState] = []
        self.sum_spread_weights = sum(s.weight for s in spreads)
        for sp in spreads:
            initial: dict[str, int] = {}
            for a in live:
                if a.task_group != tg.name or a.node_id not in table.row:
                    continue
                v, ok = resolve_target(sp.attribute, table.nodes[table.row[a.node_id]])
                if ok:
                    initial[v] = initial.get(v, 0) + 1
            self.spreads.append(build_spread(sp, tg.count, table.values(sp.attribute), initial))

        # Nodes sharing the same values of every spread attribute score the same spread boost:
        # score each combination once per placement and gather.
        self._combo_vals: IntArray = np.zeros((0, 0), dtype=np.int64)
        self._combo_of_row: IntArray = np.zeros(len(table), dtype=np.int64)
        if self.spreads:
            stacked = np.stack([sp.value_ids for sp in self.spreads], axis=1)
            combos, inverse = np.unique(stacked, axis=0, return_inverse=True)
            self._combo_vals = combos
            self._combo_of_row = inverse.reshape(-1).astype(np.int64)

    def assign_ports(self, row: int) -> tuple[list[AllocatedPortMapping], str] | None:
        """The ports the group is given on the row's node; None (the row no longer fits) if
        they cannot be."""
        got = self.ports.assign(row)
        if got is None:
            self._fits[row] = False
            self._visit_scores[self._visit_pos[row]] = -np.inf
        return got

    def _limit(self, feasible_nodes: int) -> int:
        limit = 2
        if not self.batch and feasible_nodes > 0:
            limit = max(limit, math.ceil(math.log2(max(len(self.table), 1))))
        if self.has_affinity or self.spreads:
            # Spread and affinity need candidates enough to even out (Nomad's
            # NodeLimitForFeasibilityChecks).
            limit = max(self.tg.count, self.config.node_limit())
        return limit

    # --- plan bookkeeping ---
    def placed(self, row: int, alloc: Allocation) -> None:
        self.table.changes.append(row)
        self.tg_count[row] += 1
        self.job_count[row] += 1
        for sp in self.spreads:
            sp.add(row)
        for st, _ in self.distinct_props:
            st.add(row)

    def stopped(self, alloc: Allocation, sign: int = -1) -> None:
        """Account for a planned stop (sign -1), or take it back (sign +1)."""
        i = self.table.row.get(alloc.node_id)
        if i is None:
            return
        self.table.changes.append(i)
        self.job_count[i] += sign
        if alloc.task_group == self.tg.name:
            self.tg_count[i] += sign
            for sp in self.spreads:
                sp.add(i, sign)
        for st, _ in self.distinct_props:
            st.add(i, sign)

    # --- selection ---
    def fits(self) -> BoolArray:
        """Nodes that are feasible, have room for the ask and satisfy distinct_* now."""
        self._refresh()
        return self._fits

    def _refresh(self) -> None:
        """Bring the per-row caches up to date: all rows the first time (or when
        distinct_property makes one placement change many rows), then only changed rows."""
        self.ports.refresh()
        log = self.table.changes
        if self._seen < 0 or self.distinct_props:
            rows: IntArray | None = None
        elif len(log) > self._seen:
            changed = set(log[self._seen :])
            self._seen = len(log)
            if len(changed) <= _SCALAR_ROWS:
                for row in changed:
                    self._refresh_row(row)
                return
            rows = np.fromiter(changed, dtype=np.int64)
        else:
            return
        self._seen = len(log)
        t = self.table
        sel: IntArray | slice = slice(None) if rows is None else rows
        self._fits[sel] = self._compute_fits(rows)
        self._binpack[sel] = self._fit_scores(
            t.used_cpu[sel], t.used_mem[sel], t.inv_cpu[sel], t.inv_mem[sel], self.ask_cpu, self.ask_mem
        )
        self._anti[sel] = anti_affinity_scores(self.tg_count[sel], self.tg.count)
        if self._by_visit:
            bp, anti = self._binpack[sel], self._anti[sel]
            # As ScoreBreakdown.normalized: anti-affinity counts in the mean where it is not 0.
            final = np.where(self._fits[sel], np.where(anti != 0, (bp + anti) / 2.0, bp), -np.inf)
            if rows is None:
                self._visit_scores = final[self.order]
            else:
                self._visit_scores[self._visit_pos[rows]] = final

    def _refresh_row(self, row: int) -> None:
        """`_refresh` for one row, in plain floats: a placement changes one row, and a dozen
        NumPy calls on one-element arrays cost several times this. Same formulas as
        `_compute_fits`, the fit scores and `anti_affinity_scores` (without distinct_property,
        which refreshes every row)."""
        t = self.table
        used_cpu, used_mem = float(t.used_cpu[row]), float(t.used_mem[row])
        fits = (
            bool(self.feasible[row])
            and not self.ports.blocked[row]
            and used_cpu + self.ask_cpu <= t.cap_cpu[row]
            and used_mem + self.ask_mem <= t.cap_mem[row]
            and float(t.used_disk[row]) + self.ask_disk <= t.cap_disk[row]
        )
        tg_count = int(self.tg_count[row])
        if self.distinct_hosts_job and self.job_count[row] != 0:
            fits = False
        if self.distinct_hosts_group and tg_count != 0:
            fits = False
        self._fits[row] = fits
        self._binpack[row] = self._fit_score(
            used_cpu, used_mem, float(t.inv_cpu[row]), float(t.inv_mem[row]), self.ask_cpu, self.ask_mem
        )
        anti = self._anti[row] = -(tg_count + 1.0) / max(self.tg.count, 1) if tg_count > 0 else 0.0
        if self._by_visit:
            bp = float(self._binpack[row])
            final = ((bp + anti) / 2.0 if anti != 0 else bp) if fits else -math.inf
            self._visit_scores[self._visit_pos[row]] = final

    def _compute_fits(self, rows: IntArray | None) -> BoolArray:
        t = self.table
        sel = slice(None) if rows is None else rows
        ok: BoolArray = (
            self.feasible[sel]
            & (t.used_cpu[sel] + self.ask_cpu <= t.cap_cpu[sel])
            & (t.used_mem[sel] + self.ask_mem <= t.cap_mem[sel])
            & (t.used_disk[sel] + self.ask_disk <= t.cap_disk[sel])
        )
        if self.ports.active:
            ok &= ~self.ports.blocked[sel]
        if self.distinct_hosts_job:
            ok &= self.job_count[sel] == 0
        if self.distinct_hosts_group:
            ok &= self.tg_count[sel] == 0
        for st, allowed in self.distinct_props:
            vals = st.value_ids[sel]
            used = np.where(vals >= 0, st.counts[np.where(vals >= 0, vals, 0)], 0)
            ok &= (vals >= 0) & (used < allowed)
        return ok

    def score(self, rows: IntArray, penalty_rows: set[int]) -> ScoreBreakdown:
        self._refresh()
        pen = None
        if penalty_rows:
            pen = np.where(np.isin(rows, np.fromiter(penalty_rows, dtype=np.int64)), -1.0, 0.0)
        spread = None
        if self.spreads:
            combo_scores = np.zeros(len(self._combo_vals))
            for k, sp in enumerate(self.spreads):
                combo_scores += sp.scores(self._combo_vals[:, k], self.sum_spread_weights)
            spread = combo_scores[self._combo_of_row[rows]]
        return ScoreBreakdown(
            binpack=self._binpack[rows],
            anti_affinity=self._anti[rows],
            penalty=pen,
            affinity=self.affinity[rows] if self.has_affinity else None,
            spread=spread,
        )

    def select(self, options: SelectOptions | None = None) -> Selection | None:
        options = options or SelectOptions()
        fits = self.fits()
        if options.preferred_nodes:
            pref = [self.table.row[i] for i in options.preferred_nodes if i in self.table.row]
            pref = [r for r in pref if fits[r]]
            if pref:
                rows = np.array(pref, dtype=np.int64)
                return self._choose(rows, np.arange(len(rows)), options, len(rows))
        n = len(self.order)
        if n == 0:
            return None
        if self.every:
            return self._select_every(fits, options)
        # Walk the random order from where the last selection stopped, in growing chunks, until
        # the window (limit plus the nodes the limit iterator may skip) is filled.
        want = self.limit + MAX_SKIP
        chunk = max(64, 2 * want)
        while True:
            span = min(chunk, n)
            idx = (self.offset + np.arange(span)) % n if self.offset + span > n else None
            seq = self.order[idx] if idx is not None else self.order[self.offset : self.offset + span]
            positions = np.flatnonzero(fits[seq])
            if positions.size >= want or span == n:
                break
            chunk *= 4
        if positions.size == 0:
            return None
        window = positions[:want]
        rows = seq[window]
        exhausted = span == n and positions.size <= want
        return self._choose(rows, None, options, 0, exhausted=exhausted, window=window)

    def _select_every(self, fits: BoolArray, options: SelectOptions) -> Selection | None:
        """The best of every feasible node that fits, the first in the visiting order among
        equals. Usually one argmax over the scores kept in visiting order; a placement with a
        reschedule penalty, or whose best scores at or below the limit iterator's skip
        threshold (its held-back nodes then matter), scores the candidates as Nomad would
        with no limit."""
        n = len(self.order)
        penalty = any(i in self.table.row for i in options.penalty_nodes)
        if self._by_visit and not penalty:
            k = int(np.argmax(self._visit_scores))
            best = float(self._visit_scores[k])
            if best == -math.inf:
                return None
            if best > SKIP_SCORE_THRESHOLD:
                row = int(self.order[k])
                scores = {"binpack": float(self._binpack[row])}
                if self._anti[row] != 0:
                    scores["job-anti-affinity"] = float(self._anti[row])
                return Selection(self.table.nodes[row], row, scores, best, n)
        rotated = np.concatenate([self.order[self.offset :], self.order[: self.offset]])
        rows = rotated[fits[rotated]]
        if rows.size == 0:
            return None
        return self._choose(rows, None, options, n, limit=len(rows))

    def _choose(
        self,
        rows: IntArray,
        kept: IntArray | None,
        options: SelectOptions,
        evaluated: int,
        exhausted: bool = True,
        window: IntArray | None = None,
        limit: int = 0,
    ) -> Selection | None:
        penalty_rows = {self.table.row[i] for i in options.penalty_nodes if i in self.table.row}
        breakdown = self.score(rows, penalty_rows)
        normalized = breakdown.normalized()
        best, furthest = self._best(normalized, kept, exhausted, limit or self.limit)
        if window is not None:
            # The source advanced past every node it had to pull to fill the window.
            last = int(window[furthest]) if furthest >= 0 else int(window[-1])
            evaluated = last + 1
            self.offset = (self.offset + last + 1) % len(self.order)
        if best < 0:
            return None
        row = int(rows[best])
        return Selection(
            node=self.table.nodes[row],
            row=row,
            scores=breakdown.for_index(best),
            norm_score=float(normalized[best]),
            nodes_evaluated=evaluated,
        )

    def _best(
        self, scores: FloatArray, kept: IntArray | None, exhausted: bool, limit: int
    ) -> tuple[int, int]:
        """The winning candidate (the first best in visiting order, as Nomad's max-score
        iterator picks) among those the limit window keeps (or `kept`), and the furthest
        candidate the window kept; -1 for none. The usual window of a dozen candidates is
        handled in plain Python, which beats NumPy calls on tiny arrays."""
        if len(scores) <= _SCALAR_WINDOW:
            values: list[float] = scores.tolist()
            chosen = kept.tolist() if kept is not None else limit_window(values, limit, exhausted)
            if not chosen:
                return -1, -1
            return max(chosen, key=values.__getitem__), max(chosen)
        picked = kept if kept is not None else limit_window_array(scores, limit, exhausted)
        if picked.size == 0:
            return -1, -1
        return int(picked[int(np.argmax(scores[picked]))]), int(picked.max())

    def failure_metric(self, nodes_available: dict[str, int], nodes_in_pool: int) -> AllocMetric:
        """Why a placement failed: what feasibility filtered and which dimension ran out."""
        return failure_metric(self, nodes_available, nodes_in_pool)


_SCORE_META = NodeScoreMeta()


def score_meta(sel: Selection) -> NodeScoreMeta:
    # Built unvalidated (copy_with): its members are already of their types.
    return copy_with(
        _SCORE_META, {"node_id": sel.node.id, "scores": sel.scores, "norm_score": sel.norm_score}
    )
