from __future__ import annotations

import pytest

from drover.scheduler.lanes import LANE_LARGE as L
from drover.scheduler.lanes import LANE_SMALL as S
from drover.scheduler.lanes import broker_limits, is_large, large_window, worker_lanes


@pytest.mark.parametrize(
    ("window", "large", "want"),
    [
        (None, None, None),
        (None, 3, None),
        (1, None, 1),
        (2, None, 2),
        (3, None, 1),  # one large eval at a time by default
        (5, None, 1),
        (1, 1, 1),
        (2, 1, 1),
        (2, 5, 1),  # with two or more slots, one is always kept for small evals
        (3, 5, 2),
        (3, 1, 1),
        (3, 0, 1),
    ],
)
def test_large_window(window: int | None, large: int | None, want: int | None) -> None:
    assert large_window(window, large) == want


@pytest.mark.parametrize(
    ("workers", "large", "want"),
    [
        (0, None, []),
        (1, None, [""]),
        (2, None, ["", ""]),  # both may take large evals at once: no lanes
        (2, 1, [L, S]),
        (3, None, [L, S, S]),
        (3, 1, [L, S, S]),
        (4, None, [L, S, S, S]),
        (3, 2, [L, L, S]),
        (4, 2, [L, L, S, S]),
        (1, 1, [""]),
    ],
)
def test_worker_lanes(workers: int, large: int | None, want: list[str]) -> None:
    assert worker_lanes(workers, large) == want


def test_large_is_more_than_a_hundred_placements() -> None:
    assert [is_large(n) for n in (1, 100, 101, 1000)] == [False, False, True, True]


@pytest.mark.parametrize(
    ("workers", "large", "depth", "want"),
    [
        # three workers, one large lane: it takes two large evals, a slot each stays small
        # (one while a small eval is out)
        (3, None, 2, (4, 2, 1)),
        (3, None, 1, (3, None, None)),
        (5, 2, 2, (7, 4, 2)),
        (4, 1, 3, (6, 3, 1)),
        # no lanes (fewer than three workers by default): one eval per worker, as given
        (2, None, 2, (2, None, None)),
        (1, None, 2, (1, None, None)),
    ],
)
def test_broker_limits(
    workers: int, large: int | None, depth: int, want: tuple[int, int | None, int | None]
) -> None:
    window, large_limit, beside_small = broker_limits(workers, large, depth)
    assert (window, large_limit, beside_small) == want
    if large_limit is not None:
        # what the broker then allows: every large-lane worker's depth, and the small slots
        assert large_window(window, large_limit) == large_limit
        assert window - large_limit == worker_lanes(workers, large).count(S)
