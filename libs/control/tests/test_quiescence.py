"""A template's wait (consul-template's quiescence): rendered once the data has been quiet for
`min`, and at the latest `max` after the first change."""

from __future__ import annotations

import pytest

from drover.control.client.quiescence import Quiescence
from drover.model.durations import SECOND as S
from drover.model.taskfiles import WaitConfig


@pytest.mark.parametrize(
    ("wait", "changes", "renders"),
    [
        # One change: rendered min after it.
        ((2, 10), [0], [2]),
        # Changes closer than min push it back, each by min.
        ((2, 10), [0, 1, 2.5], [4.5]),
        # A steady stream of changes: rendered at max after the first, then anew.
        ((2, 5), [0, 1, 2, 3, 4, 4.5, 5.5, 6], [5, 8]),
        # Quiet spells between changes: each rendered on its own.
        ((1, 4), [0, 3, 6], [1, 4, 7]),
        # No max given: four times min.
        ((1, 0), [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4.5], [4, 5.5]),
        # No min: rendered at once.
        ((0, 0), [0, 3], [0, 3]),
    ],
)
def test_renders(wait: tuple[float, float], changes: list[float], renders: list[float]) -> None:
    q = Quiescence.of(WaitConfig(min=int(wait[0] * S), max=int(wait[1] * S)))
    pending = sorted(int(c * S) for c in changes)
    got: list[float] = []
    # Step a 0.5 s clock: each change ticks, then the timer is asked.
    for step in range(0, 41):
        now = step * S // 2
        while pending and pending[0] <= now:
            q.tick(pending.pop(0))
        if q.fire(now):
            got.append(now / S)
    assert got == renders


def test_nothing_renders_without_a_change() -> None:
    q = Quiescence.of(WaitConfig(min=S, max=2 * S))
    assert not q.fire(0) and not q.fire(100 * S)
    q.tick(100 * S)
    assert not q.fire(100 * S + S - 1)
    assert q.fire(101 * S) and not q.fire(102 * S)
