"""Spread scoring (Nomad's spread block): prefer nodes whose attribute value is furthest below its desired
share of the group's allocs. Counts are kept per attribute value and updated as the plan grows,
so each placement costs O(values + candidates), never a rescan of allocs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from drover.model import Spread
from drover.scheduler.rank import FloatArray, IntArray

IMPLICIT_TARGET = "*"


@dataclass
class SpreadState:
    """One spread block applied to one task group.

    `value_ids[row]` is the node's attribute value as an index into `counts` (-1: the node lacks
    the attribute). With targets, every value without its own target shares the implicit "*"
    slot, so their used count is pooled as in Nomad."""

    attribute: str
    weight: int
    targeted: bool
    value_names: list[str]
    value_ids: IntArray
    counts: FloatArray
    desired: FloatArray = field(default_factory=lambda: np.zeros(0))

    def add(self, row: int, n: int = 1) -> None:
        v = self.value_ids[row]
        if v >= 0:
            self.counts[v] += n

    def scores(self, vals: IntArray, sum_weights: int) -> FloatArray:
        """Spread boost of placing one more alloc on nodes whose value ids are `vals`."""
        missing = vals < 0
        safe = np.where(missing, 0, vals)
        if self.targeted:
            desired = self.desired[safe]
            used = self.counts[safe] + 1.0
            weight = self.weight / sum_weights if sum_weights else 0.0
            with np.errstate(divide="ignore", invalid="ignore"):
                boost = np.where(desired > 0, (desired - used) / desired * weight, -1.0)
            out: FloatArray = np.where(missing, -1.0, boost)
            return out
        even: FloatArray = np.where(missing, -1.0, self._even(safe))
        return even

    def _even(self, vals: IntArray) -> FloatArray:
        """Even spread: boost values below the least-used value, penalize the rest."""
        present = self.counts[self.counts > 0]
        if present.size == 0:
            return np.zeros(len(vals))
        lo, hi = float(present.min()), float(present.max())
        cur = self.counts[vals]
        # At the minimum: the largest penalty when the spread is already even, else a boost
        # proportional to how far the maximum has run ahead.
        at_min = -1.0 if lo == hi else (hi - lo) / lo
        return np.where(cur != lo, (lo - cur) / lo, at_min)


def build_spread(
    spread: Spread, count: int, node_values: list[str | None], initial: dict[str, int]
) -> SpreadState:
    """Index node values for one spread block; `initial` counts existing allocs per raw value."""
    targets = {t.value: t.percent for t in spread.spread_target}
    targeted = bool(targets)
    names: list[str] = []
    ids: dict[str, int] = {}

    def vid(raw: str) -> int:
        key = raw if (not targeted or raw in targets) else IMPLICIT_TARGET
        i = ids.get(key)
        if i is None:
            i = ids[key] = len(names)
            names.append(key)
        return i

    for t in targets:
        vid(t)
    value_ids = np.array([vid(v) if v is not None else -1 for v in node_values], dtype=np.int64)
    for raw in initial:
        vid(raw)
    counts = np.zeros(len(names))
    for raw, n in initial.items():
        counts[vid(raw)] += n
    desired = np.zeros(len(names))
    if targeted:
        total = 0.0
        for v, pct in targets.items():
            d = pct / 100.0 * count
            desired[ids[v]] = d
            total += d
        if IMPLICIT_TARGET in ids and 0 < total < count:
            desired[ids[IMPLICIT_TARGET]] = count - total
    return SpreadState(
        attribute=spread.attribute,
        weight=spread.weight,
        targeted=targeted,
        value_names=names,
        value_ids=value_ids,
        counts=counts,
        desired=desired,
    )
