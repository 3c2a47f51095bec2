"""Worker lanes: which evals count as large, how many may be out at once, and which worker
takes which (the broker publishes by it, `drover up` assigns it)."""

from __future__ import annotations

# Evals whose jobs ask for at most this many placements count as small.
SMALL_EVAL = 100

# Worker lanes (see `worker_lanes`).
LANE_SMALL = "small"
LANE_LARGE = "large"


def large_window(window: int | None, large: int | None) -> int | None:
    """How many large evals may be out at once: `large` if given, else one when there are three
    slots or more; never every slot of two or more (one is kept for small evals).

    One by default: large evals out together compete for the cores with everything a small job
    waits for, and for the same nodes (each redoes what it loses). A second one buys ~8% more
    placements/s on a saturated machine, and small jobs' p50 is ~60% higher with it
    (docs/experiments/broker-and-workers.md); `DROVER_LARGE_EVALS` chooses throughput instead."""
    if window is None:
        return None
    if large is None:
        return 1 if window >= 3 else window
    return max(1, min(large, window - 1 if window >= 2 else window))


def is_large(cost: int) -> bool:
    return cost > SMALL_EVAL


def worker_lanes(workers: int, large: int | None) -> list[str]:
    """The lane of each of `workers` workers: one per large eval the broker may have out at once
    takes large evals, the rest small ones - when that leaves a slot for small evals (three
    workers or more by default); otherwise none has a lane and every eval goes to any worker.

    Lanes let large evals run at a lower CPU priority than everything a small job waits for
    (the large lane's workers lower theirs): on a saturated machine the scheduling of large
    jobs then gives way to the small ones' register, plan and commit."""
    n = large_window(workers, large)
    if n is None or workers < 2 or n >= workers:
        return [""] * max(0, workers)
    return [LANE_LARGE] * n + [LANE_SMALL] * (workers - n)


def broker_limits(workers: int, large: int | None, depth: int) -> tuple[int, int | None, int | None]:
    """The broker's dispatch window, large-eval limit and large-eval limit while a small eval
    is out (`EvalBroker(window, large, large_beside_small)`): a slot per worker, and with lanes
    `depth` large evals per large-lane worker, which schedules the next while the previous
    one's plan is being committed (drover.worker) - one each while a small eval is out, or was
    within the broker's `small_quiet`."""
    n = worker_lanes(workers, large).count(LANE_LARGE)
    if n == 0 or depth <= 1:
        return workers, large, None
    return workers + n * (depth - 1), n * depth, n
