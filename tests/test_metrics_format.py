"""/v1/metrics' two forms of the same metrics, from snapshots made here."""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families

from drover.api.metricsformat import nomad_json, prometheus_text
from drover.runtime.metrics import Metrics

CLUSTER = [
    {"Name": "allocs", "Labels": {"client_status": "running"}, "Value": 3},
    {"Name": "log.position", "Labels": {}, "Value": 42},
]


def _snapshot() -> dict[str, object]:
    f = Metrics("planner", "11")
    f.gauge("plan.queue_depth", 2)
    f.count("plan.placements", 5)
    f.count("plan.placements", 1)
    t = f.timing("plan.apply")
    for seconds in (0.002, 0.004, 0.3):
        t.observe(seconds)
    snap = f.snapshot()
    snap["Started"] = snap["Time"] - 10.0
    return snap


def test_prometheus_text_parses_with_the_process_labels_and_cumulative_buckets() -> None:
    text = prometheus_text(CLUSTER, [_snapshot()]).decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("drover_allocs", (("client_status", "running"),))] == 3
    assert samples[("drover_log_position", ())] == 42
    me = (("instance", "11"), ("service", "planner"))
    assert samples[("drover_plan_queue_depth", me)] == 2
    assert samples[("drover_plan_placements_total", me)] == 6
    assert samples[("drover_plan_apply_seconds_count", me)] == 3
    assert math.isclose(samples[("drover_plan_apply_seconds_sum", me)], 0.306)
    assert (
        samples[
            (
                "drover_plan_apply_seconds_bucket",
                (("instance", "11"), ("le", "0.0025"), ("service", "planner")),
            )
        ]
        == 1
    )
    assert (
        samples[
            (
                "drover_plan_apply_seconds_bucket",
                (("instance", "11"), ("le", "0.005"), ("service", "planner")),
            )
        ]
        == 2
    )
    assert (
        samples[
            ("drover_plan_apply_seconds_bucket", (("instance", "11"), ("le", "+Inf"), ("service", "planner")))
        ]
        == 3
    )


def test_nomad_json_in_milliseconds_with_mean_spread_and_rate() -> None:
    doc = nomad_json(CLUSTER, [_snapshot()])
    assert {"Name": "drover.log.position", "Value": 42, "Labels": {}} in doc["Gauges"]
    (apply,) = doc["Samples"]
    assert apply["Name"] == "drover.plan.apply"
    assert (apply["Count"], apply["Min"], apply["Max"]) == (3, 2.0, 300.0)
    assert math.isclose(apply["Mean"], 102.0)
    assert math.isclose(apply["Stddev"], math.sqrt(((2 - 102) ** 2 + (4 - 102) ** 2 + (300 - 102) ** 2) / 2))
    assert math.isclose(apply["Rate"], 30.6)  # 306 ms over the process's 10 s
    (placements,) = doc["Counters"]
    assert (placements["Count"], placements["Sum"], placements["Min"], placements["Max"]) == (2, 6, 1, 5)
    assert placements["Labels"] == {"service": "planner", "instance": "11"}
