"""A process's metrics: timings in their buckets, counters as Nomad keeps them, collectors."""

from __future__ import annotations

import asyncio

from drover.runtime.metrics import BUCKETS, Metrics, Timing


def test_a_timing_counts_each_observation_in_the_first_bucket_that_holds_it() -> None:
    t = Timing()
    for seconds in (0.0001, 0.0005, 0.0006, 0.3, 99.0):
        t.observe(seconds)
    assert t.buckets[0] == 2  # bounds are inclusive: 0.0005 is in the first
    assert t.buckets[1] == 1
    assert t.buckets[BUCKETS.index(0.5)] == 1
    assert t.buckets[-1] == 1  # above every bound
    assert (t.count, t.min, t.max) == (5, 0.0001, 99.0)
    assert abs(t.sum - 99.3012) < 1e-9


def test_counters_keep_additions_sum_and_extremes_per_label_set() -> None:
    f = Metrics("planner", "7")
    f.count("plan.placements", 3)
    f.count("plan.placements", 10)
    f.count("plan.placements", 1, lane="large")
    snap = f.snapshot()
    by_labels = {tuple(c["Labels"].items()): c for c in snap["Counters"]}
    plain = by_labels[()]
    assert (plain["Count"], plain["Sum"], plain["SumSq"], plain["Min"], plain["Max"]) == (2, 13, 109, 3, 10)
    assert by_labels[(("lane", "large"),)]["Sum"] == 1
    assert (snap["Service"], snap["Instance"]) == ("planner", "7")


def test_collectors_set_gauges_before_a_snapshot_and_a_failing_one_spoils_nothing() -> None:
    f = Metrics("relay")
    depth = [4]

    def broken(_: Metrics) -> None:
        raise RuntimeError("gone")

    async def lag(metrics: Metrics) -> None:
        metrics.gauge("relay.lag", depth[0])

    f.collectors += [broken, lag]
    asyncio.run(f.collect())
    assert f.snapshot()["Gauges"] == [{"Name": "relay.lag", "Labels": {}, "Value": 4}]
    depth[0] = 0
    asyncio.run(f.collect())
    assert f.snapshot()["Gauges"][0]["Value"] == 0
