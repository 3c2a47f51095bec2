"""Ranking: each stage appends a score in [-1, 1] for a candidate node; the final score is their
mean (Nomad's ScoreNormalizationIterator). Scores are computed for a whole vector of candidate
nodes at once with NumPy, so scoring hundreds of nodes costs about as much as scoring one.

Stages, in Nomad's order: binpack, job anti-affinity, reschedule penalty, node affinity, spread.
The first stage's fit is the scheduler configuration's algorithm (Nomad's "binpack" score
either way): binpack's best fit (fuller nodes first) or spread's worst fit (emptier first).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# The best binpack fit score before normalization (Nomad's binPackingMaxFitScore).
BINPACK_MAX_FIT_SCORE = 18.0
_LN10 = float(np.log(10.0))


def _fit_totals(
    used_cpu: FloatArray,
    used_mem: FloatArray,
    inv_cpu: FloatArray,
    inv_mem: FloatArray,
    ask_cpu: float,
    ask_mem: float,
) -> FloatArray:
    """10^free_cpu + 10^free_mem after placing the ask on each node, where free = 1 -
    used/capacity: 2 on a node the ask fills, 20 on an empty one (Nomad's fit scores'
    common part). Capacities come inverted (0 for a node without any)."""
    free_cpu = 1.0 - (used_cpu + ask_cpu) * inv_cpu
    free_mem = 1.0 - (used_mem + ask_mem) * inv_mem
    total: FloatArray = np.exp(free_cpu * _LN10) + np.exp(free_mem * _LN10)
    return total


def _fit_total(
    used_cpu: float, used_mem: float, inv_cpu: float, inv_mem: float, ask_cpu: float, ask_mem: float
) -> float:
    """`_fit_totals` for one node, in plain floats."""
    free_cpu = 1.0 - (used_cpu + ask_cpu) * inv_cpu
    free_mem = 1.0 - (used_mem + ask_mem) * inv_mem
    return math.exp(free_cpu * _LN10) + math.exp(free_mem * _LN10)


def binpack_scores(
    used_cpu: FloatArray,
    used_mem: FloatArray,
    inv_cpu: FloatArray,
    inv_mem: FloatArray,
    ask_cpu: float,
    ask_mem: float,
) -> FloatArray:
    """Binpack fit of placing the ask on each node (Nomad's ScoreFitBinPack, a best fit):
    20 - the fit total, clamped to [0, 18], over 18. Fuller nodes score higher."""
    total = _fit_totals(used_cpu, used_mem, inv_cpu, inv_mem, ask_cpu, ask_mem)
    out: FloatArray = np.clip(20.0 - total, 0.0, BINPACK_MAX_FIT_SCORE) / BINPACK_MAX_FIT_SCORE
    return out


def binpack_score(
    used_cpu: float, used_mem: float, inv_cpu: float, inv_mem: float, ask_cpu: float, ask_mem: float
) -> float:
    """`binpack_scores` for one node, in plain floats."""
    total = _fit_total(used_cpu, used_mem, inv_cpu, inv_mem, ask_cpu, ask_mem)
    return min(max(20.0 - total, 0.0), BINPACK_MAX_FIT_SCORE) / BINPACK_MAX_FIT_SCORE


def spread_fit_scores(
    used_cpu: FloatArray,
    used_mem: FloatArray,
    inv_cpu: FloatArray,
    inv_mem: FloatArray,
    ask_cpu: float,
    ask_mem: float,
) -> FloatArray:
    """Spread fit of placing the ask on each node (Nomad's ScoreFitSpread, a worst fit): the
    fit total - 2, clamped to [0, 18], over 18. Emptier nodes score higher."""
    total = _fit_totals(used_cpu, used_mem, inv_cpu, inv_mem, ask_cpu, ask_mem)
    out: FloatArray = np.clip(total - 2.0, 0.0, BINPACK_MAX_FIT_SCORE) / BINPACK_MAX_FIT_SCORE
    return out


def spread_fit_score(
    used_cpu: float, used_mem: float, inv_cpu: float, inv_mem: float, ask_cpu: float, ask_mem: float
) -> float:
    """`spread_fit_scores` for one node, in plain floats."""
    total = _fit_total(used_cpu, used_mem, inv_cpu, inv_mem, ask_cpu, ask_mem)
    return min(max(total - 2.0, 0.0), BINPACK_MAX_FIT_SCORE) / BINPACK_MAX_FIT_SCORE


FitScores = Callable[[FloatArray, FloatArray, FloatArray, FloatArray, float, float], FloatArray]
FitScore = Callable[[float, float, float, float, float, float], float]


def fit_functions(spread: bool) -> tuple[FitScores, FitScore]:
    """The fit stage's vector and scalar scoring for the configured algorithm."""
    return (spread_fit_scores, spread_fit_score) if spread else (binpack_scores, binpack_score)


def anti_affinity_scores(collisions: IntArray, desired_count: int) -> FloatArray:
    """-(c + 1) / count where the node already holds c > 0 allocs of this job and group."""
    c = collisions.astype(np.float64)
    return np.where(c > 0, -(c + 1.0) / max(desired_count, 1), 0.0)


@dataclass
class ScoreBreakdown:
    """Per-stage scores for candidates, and which stages applied to which candidate. A stage
    that scored no candidate at all may be None (most placements have no penalty, affinity or
    spread; leaving them out spares a dozen vector operations per placement)."""

    binpack: FloatArray
    anti_affinity: FloatArray
    penalty: FloatArray | None = None
    affinity: FloatArray | None = None
    spread: FloatArray | None = None

    def _stages(self) -> list[tuple[str, FloatArray]]:
        named = (
            ("job-anti-affinity", self.anti_affinity),
            ("node-reschedule-penalty", self.penalty),
            ("node-affinity", self.affinity),
            ("allocation-spread", self.spread),
        )
        return [(name, arr) for name, arr in named if arr is not None]

    def normalized(self) -> FloatArray:
        """Mean over the stages that produced a score (Nomad appends only non-zero ones for
        anti-affinity, penalty, affinity and spread; binpack always)."""
        total = self.binpack.copy()
        n = np.ones(len(total))
        for _, arr in self._stages():
            total += arr
            n += arr != 0
        out: FloatArray = total / n
        return out

    def for_index(self, i: int) -> dict[str, float]:
        out = {"binpack": float(self.binpack[i])}
        for name, arr in self._stages():
            if arr[i] != 0:
                out[name] = float(arr[i])
        return out


# The limit iterator skips up to this many candidates scoring at or below the threshold, so a
# node with penalties does not win only because it came early in the random order (Nomad's
# maxSkip / skipScoreThreshold).
MAX_SKIP = 3
SKIP_SCORE_THRESHOLD = 0.0


def limit_window(scores: Sequence[float], limit: int, exhausted: bool) -> list[int]:
    """Which candidates (positions into `scores`, in visiting order) the limit iterator yields:
    the first `limit` after holding back the first MAX_SKIP low scorers; the held-back ones are
    used only if the source ran out first. Plain Python, for the usual window of a dozen
    candidates; `limit_window_array` is the same for large ones."""
    kept: list[int] = []
    held: list[int] = []
    for i, score in enumerate(scores):
        if score <= SKIP_SCORE_THRESHOLD and len(held) < MAX_SKIP:
            held.append(i)
            continue
        kept.append(i)
        if len(kept) == limit:
            return kept
    if exhausted:
        kept += held[: limit - len(kept)]
    return kept


def limit_window_array(scores: FloatArray, limit: int, exhausted: bool) -> IntArray:
    """`limit_window` with NumPy, for windows of hundreds of candidates (spread, full scans)."""
    low = scores <= SKIP_SCORE_THRESHOLD
    held = low & (np.cumsum(low) <= MAX_SKIP)
    kept = np.flatnonzero(~held)[:limit]
    if len(kept) < limit and exhausted:
        kept = np.concatenate([kept, np.flatnonzero(held)[: limit - len(kept)]])
    return kept
