"""bench.table: the figures table is the benchmarks' JSON, a benchmark not run says so, and a
target missed says "no". Fast: sample JSON of the benchmarks' own shape, no servers."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    # bench/ is not an installed package (the benchmarks run as `python -m bench.x` from the
    # repository's root); table.py imports the standard library only.
    spec = importlib.util.spec_from_file_location("bench_table", ROOT / "bench" / "table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


table = _load()

# Shapes copied from real runs (bench.scheduler --quick, bench.codec) and from what
# bench/pipeline.py and bench/memory.py write.
SCHEDULER: dict[str, Any] = {
    "benchmark": "scheduler",
    "targets": {
        "spread_10000_nodes_1200_allocs_dc_and_rack": "ms_per_eval < 1000 and spread_error <= 1",
        "no_spread_5000_nodes_1000_allocs": "ms_per_eval < 300",
    },
    "headline": {
        "spread_10000_nodes_1200_allocs_dc_and_rack": {
            "nodes": 10000, "racks": 50, "allocs": 1200, "spread": ["${node.datacenter}", "${meta.rack}"],
            "full_scan": False, "placed": 1200, "ms_per_eval": 248.5, "us_per_placement": 207.1,
            "repeats": 3, "spread_error": {"${node.datacenter}": 0.0, "${meta.rack}": 1.0},
        },
        "spread_10000_nodes_1200_allocs_dc_and_rack_no_limit": {
            "nodes": 10000, "racks": 50, "allocs": 1200, "spread": ["${node.datacenter}", "${meta.rack}"],
            "full_scan": True, "placed": 1200, "ms_per_eval": 483.98, "us_per_placement": 403.3,
            "repeats": 1, "spread_error": {"${node.datacenter}": 0.0, "${meta.rack}": 0.0},
        },
        "no_spread_5000_nodes_1000_allocs": {
            "nodes": 5000, "racks": 50, "allocs": 1000, "spread": [], "full_scan": False, "placed": 1000,
            "ms_per_eval": 35.22, "us_per_placement": 35.2, "repeats": 3,
        },
        "no_spread_5000_nodes_10_allocs": {
            "nodes": 5000, "racks": 50, "allocs": 10, "spread": [], "full_scan": False, "placed": 10,
            "ms_per_eval": 1.01, "us_per_placement": 100.6, "repeats": 21,
        },
    },
    "matrix": [],
}  # fmt: skip
CODEC: dict[str, Any] = {
    "benchmark": "codec",
    "allocs": 1000,
    "per_alloc": {
        "columns_metrics_apart": {
            "stored_bytes_per_alloc": 320.9, "relayed_bytes_per_alloc": 84.9, "store_encode_us": 5.98,
            "replica_decode_us": 0.22, "full_decode_us": 6.61, "broker_decode_us": 0.3,
            "replica_follow_us": 5.28, "broker_follow_us": 0.79, "plan_request_bytes_per_alloc": 35.3,
            "plan_request_encode_us": 10.33, "plan_request_decode_us": 2.63,
        }
    },
}  # fmt: skip
PIPELINE: dict[str, Any] = {
    "benchmark": "pipeline", "nodes": 5000, "jobs": 100, "count": 1000, "submit_over_s": 0.0,
    "large_evals": None, "host_reference_eval_ms": 85.2, "node_register_s": 30.1,
    "allocs_placed": 100000, "submit_all_s": 1.9, "first_register_to_last_commit_s": 20.77,
    "placements_per_s": 4815.0, "probe_jobs": 40,
    "probe_register_to_placed_ms": {"p50": 114.5, "p99": 566.0},
    "probe_register_request_ms_p50": 21.3,
    "cpu_s_during_load": {"api-0": 2.1, "broker-0": 0.9, "nats": 0.5, "postgres": 4.7, "bench": 0.6, "machine": 37.6},
    "peak_rss_mb": {"api-0": 112.0, "worker-0": 240.1, "planner-0": 236.5},
    "targets": {"placements_per_s": ">= 5000", "probe_p50_ms": "< 50", "rss_mb_at_1M_allocs": "< 1500"},
    "nodes_missed": 0,
}  # fmt: skip
MEMORY: dict[str, Any] = {
    "benchmark": "memory",
    "target": "rss_mb_at_1M_allocs < 800",
    "replica": [
        {"allocs": 100000, "nodes": 5000, "peak_rss_mb": 148.0, "load_s": 2.6, "allocs_applied_per_s": 38500,
         "load_cpu_s": 2.5, "allocs_applied_per_cpu_s": 40000, "replica_cpu_s": 0.6, "replica_us_per_alloc": 6.1,
         "runs": 3},
        {"allocs": 1000000, "nodes": 5000, "peak_rss_mb": 712.0, "load_s": 26.1, "allocs_applied_per_s": 38300,
         "load_cpu_s": 25.0, "allocs_applied_per_cpu_s": 40010, "replica_cpu_s": 6.3, "replica_us_per_alloc": 6.3,
         "runs": 3},
    ],
    "baseline": {"tree": "../before", "commit": "9ba837bd", "replica": []},
    "against_baseline": {"allocs": 1000000, "peak_rss_mb": 0.574, "allocs_applied_per_cpu_s": 1.012,
                         "replica_us_per_alloc": 0.981, "allocs_applied_per_s": 1.004},
    "pairs": {"this": {}, "baseline": {}},
    "mb_per_100k_allocs": 62.7,
}  # fmt: skip


RESTARTS: dict[str, Any] = {
    "benchmark": "restarts", "nodes": 1000, "count": 5000, "batch_size": 500, "restart_delay_s": 0.05,
    "host_reference_eval_ms": 38.77,
    "targets": {"control_plane_ms_per_batch": "< 100 (p50 and max)", "total_s": "< 15"},
    "status": "complete", "batches": 10, "allocs_restarted": 5000, "allocs_signalled_once": 5000,
    "total_s": 20.71, "control_plane_ms_per_batch": {"p50": 1474.9, "max": 2020.2},
    "client_report_ms": {"p50": 735.7, "max": 1239.1}, "report_to_signal_ms": {"p50": 781.1, "max": 850.8},
    "leader_cpu_s": 1.38,
}  # fmt: skip


GC: dict[str, Any] = {
    "benchmark": "gc", "jobs": 1000, "evals": 10000, "allocs": 100000, "nodes": 500,
    "host_reference_eval_ms": 41.2, "target": "lock_held_ms max < 50", "chunk": 500, "complete": True,
    "fill_s": 5.9, "replica_load_s": 2.4, "total_s": 2.68, "appends": 224,
    "lock_held_ms": {"p50": 6.1, "p99": 18.9, "max": 57.2}, "append_ms": {"p50": 7.5, "max": 58.2},
    "runs": [],
}  # fmt: skip


# What bench/events.py writes (its pipeline arms shortened).
EVENTS: dict[str, Any] = {
    "benchmark": "events", "subscribers": 50, "processes": 5, "nodes": 5000, "jobs": 100, "count": 1000,
    "baseline": "run here, before the arm with subscribers",
    "window": {"after": 5000, "last": 9310, "log_positions": 4310, "frames": 4302},
    "log_events": 112345, "events_received": [112345, 112340], "subscribers_short": 1,
    "every_event_to_every_subscriber_in_order": False,
    "lag_ms": {"p50": 41.2, "p99": 1310.5, "max": 2204.0}, "per_subscriber": [],
    "api_cpu_s": {"with": 30.2, "without": 2.1}, "api_cpu_s_per_subscriber": 0.562,
    "subscribers_cpu_s": 12.4, "placements_per_s": {"with": 4410.0, "without": 4815.0},
    "throughput_ratio": 0.916,
    "targets": {"subscribers_short": "= 0", "lag_ms_p99": "< 1000", "throughput_ratio": ">= 0.9"},
    "pipeline_with": {**PIPELINE, "placements_per_s": 4410.0},
    "pipeline_without": PIPELINE,
}  # fmt: skip


def _write(out: Path, **reports: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, report in reports.items():
        (out / f"{name}.json").write_text(json.dumps(report, indent=2))


def _row(rows: list[list[str]], benchmark: str, figure: str) -> list[str]:
    return next(r for r in rows if r[0] == benchmark and r[1] == figure)


def test_the_table_is_the_benchmarks_json(tmp_path: Path) -> None:
    _write(tmp_path, scheduler=SCHEDULER, codec=CODEC, pipeline=PIPELINE, memory=MEMORY)
    rows = table.rows(tmp_path)
    spread = _row(rows, "scheduler", "10,000 nodes, 1,200 allocs, spread on dc + rack")
    assert spread[2:5] == ["248.5 ms per eval", "< 1,000 ms per eval", "yes"]
    assert spread[5].endswith(" UTC")
    assert _row(rows, "scheduler", "the same: spread error on rack")[2:5] == [
        "1.0 allocs",
        "<= 1 allocs",
        "yes",
    ]
    assert _row(rows, "scheduler", "5,000 nodes, 10 allocs")[2:5] == ["1.01 ms per eval", "none", "-"]
    assert _row(rows, "codec", "1,000-alloc plan: relayed")[2] == "84.9 bytes per alloc"
    assert _row(rows, "memory", "replica at 1,000,000 allocs: peak RSS")[2:5] == [
        "712.0 MB",
        "< 800 MB",
        "yes",
    ]
    assert _row(rows, "memory", "applied per CPU-second against the code before (interleaved pairs)")[
        2:5
    ] == [
        "1.012 x",
        ">= 0.9 x",
        "yes",
    ]
    assert _row(rows, "pipeline", "peak RSS, largest service")[2] == "240.1 MB"
    assert _row(rows, "pipeline", "nodes missed")[2:5] == ["0 nodes", "= 0 nodes", "yes"]
    # Every measured value in the table is one the JSON holds.
    written = json.dumps([SCHEDULER, CODEC, PIPELINE, MEMORY])
    for row in rows:
        if row[2] not in ("not run", "not measured"):
            assert row[2].split()[0].replace(",", "") in written, row


def test_a_target_missed_says_no(tmp_path: Path) -> None:
    _write(tmp_path, pipeline=PIPELINE)
    rows = table.rows(tmp_path)
    assert _row(rows, "pipeline", "100 jobs x 1,000 allocs on 5,000 nodes")[2:5] == [
        "4,815.0 placements/s",
        ">= 5,000 placements/s",
        "no",
    ]
    p50 = _row(rows, "pipeline", "count-10 job under that load, register to placed, p50")
    assert p50[2:5] == ["114.5 ms", "< 50 ms", "no"]


def test_a_benchmark_not_run_says_so(tmp_path: Path) -> None:
    _write(tmp_path, scheduler=SCHEDULER)
    rows = table.rows(tmp_path)
    for name in table.FIGURES:
        if name != "scheduler":
            assert [r for r in rows if r[0] == name] == [[name, "-", "not run", "-", "-", "-"]]
    # A figure the run did not measure (the pipeline with --no-probes) is not made up either.
    _write(tmp_path, pipeline={**PIPELINE, "probe_register_to_placed_ms": {"p50": None, "p99": None}})
    p50 = _row(table.rows(tmp_path), "pipeline", "count-10 job under that load, register to placed, p50")
    assert p50[2:5] == ["not measured", "< 50 ms", "-"]


def test_main_rewrites_only_between_the_markers(tmp_path: Path) -> None:
    _write(tmp_path / "out", codec=CODEC)
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Intro\n\n{table.FIGURES_BEGIN}\nold table\n{table.FIGURES_END}\n\n## Dated\n")
    table.main(["--out-dir", str(tmp_path / "out"), "--doc", str(doc)])
    text = doc.read_text()
    assert text.startswith(f"# Intro\n\n{table.FIGURES_BEGIN}\n| benchmark | figure |")
    assert text.endswith(f"|\n{table.FIGURES_END}\n\n## Dated\n")
    assert "old table" not in text and "| codec | 1,000-alloc plan: stored | 320.9 bytes per alloc |" in text
    table.main(["--out-dir", str(tmp_path / "out"), "--doc", str(doc)])
    assert doc.read_text() == text
    doc.write_text("no markers\n")
    with pytest.raises(SystemExit):
        table.main(["--out-dir", str(tmp_path / "out"), "--doc", str(doc)])


def test_the_restarts_rows(tmp_path: Path) -> None:
    _write(tmp_path, restarts=RESTARTS)
    rows = table.rows(tmp_path)
    whole = _row(rows, "restarts", "5,000 allocs on 1,000 sim nodes, batches of 500: the whole restart")
    assert whole[2:5] == ["20.71 s", "< 15 s", "no"]
    assert _row(rows, "restarts", "the same, max")[2:5] == ["2,020.2 ms", "< 100 ms", "no"]
    assert _row(rows, "restarts", "allocs signalled exactly once")[2:5] == [
        "5,000 allocs",
        "= 5,000 allocs",
        "yes",
    ]


def test_the_gc_rows(tmp_path: Path) -> None:
    _write(tmp_path, gc=GC)
    rows = table.rows(tmp_path)
    whole = _row(rows, "gc", "100,000 allocs, 10,000 evals, 1,000 jobs collected: the whole collection")
    assert whole[2:5] == ["2.68 s", "none", "-"]
    held = _row(rows, "gc", "events lock held by a collecting append (500 objects), longest")
    assert held[2:5] == ["57.2 ms", "< 50 ms", "no"]
    assert _row(rows, "gc", "appends")[2] == "224 appends"


def test_the_pipeline_gc_rows(tmp_path: Path) -> None:
    # What bench/pipeline.py --garbage --force-gc adds to the pipeline's JSON.
    seeded = {"jobs": 1000, "evals": 10000, "allocs": 100000, "nodes": 500, "seed_s": 4.5,
              "left": {"jobs": 0, "evals": 0, "allocs": 3, "nodes": 0}, "left_total": 3,
              "collected_all": False}  # fmt: skip
    gc = {"complete_s": 8.59, "complete_after_load_s": -8.77, "first_collected_s": 0.76,
          "last_collected_s": 8.57, "collecting_events": 1223}  # fmt: skip
    _write(tmp_path, pipeline_gc={**PIPELINE, "force_gc": True, "garbage": seeded, "gc": gc})
    rows = table.rows(tmp_path)
    name = "the same, bench/gc.py's log seeded and a forced collection from the load's start"
    assert _row(rows, "pipeline_gc", name)[2:5] == ["4,815.0 placements/s", ">= 5,000 placements/s", "no"]
    done = _row(rows, "pipeline_gc", "the collection: PUT /v1/system/gc to its core eval complete")
    assert done[2] == "8.59 s"
    left = _row(rows, "pipeline_gc", "the seeded jobs, evals, allocs and nodes left after it")
    assert left[2:5] == ["3 objects", "= 0 objects", "no"]
    # A run that never forced one has no collection to time.
    _write(tmp_path, pipeline_gc={**PIPELINE, "force_gc": False, "garbage": seeded})
    done = _row(
        table.rows(tmp_path), "pipeline_gc", "the collection: PUT /v1/system/gc to its core eval complete"
    )
    assert done[2] == "not measured"


def test_the_events_rows(tmp_path: Path) -> None:
    _write(tmp_path, events=EVENTS)
    rows = table.rows(tmp_path)
    short = _row(
        rows, "events", "50 subscribers to * during the pipeline's load: subscribers short of the log"
    )
    assert short[2:5] == ["1 subscribers", "= 0 subscribers", "no"]
    assert _row(rows, "events", "the same, p99")[2:5] == ["1,310.5 ms", "< 1,000 ms", "no"]
    ratio = _row(rows, "events", "pipeline with subscribers, against without")
    assert ratio[2:5] == ["0.916 of the placements/s", ">= 0.9 of the placements/s", "yes"]
    assert _row(rows, "events", "API CPU per subscriber during the load")[2] == "0.562 CPU-s"
    assert _row(rows, "events", "pipeline without subscribers")[2] == "4,815.0 placements/s"
    assert _row(rows, "events", "host speed: 5,000-node, 1,000-alloc eval")[2] == "85.2 ms"
    # A run whose subscribers received nothing has no lag to show.
    _write(tmp_path, events={**EVENTS, "lag_ms": {"p50": None, "p99": None, "max": None}})
    assert _row(table.rows(tmp_path), "events", "the same, p99")[2:5] == ["not measured", "< 1,000 ms", "-"]


def test_keep_holds_the_rows_of_benchmarks_not_run(tmp_path: Path) -> None:
    # A full run, then a run of the scheduler alone with --keep: codec's rows stay as they were
    # (their dates too), the scheduler's are rewritten.
    _write(tmp_path / "out", codec=CODEC, scheduler=SCHEDULER)
    doc = tmp_path / "performance.md"
    doc.write_text(f"{table.FIGURES_BEGIN}\n{table.FIGURES_END}\n")
    table.main(["--out-dir", str(tmp_path / "out"), "--doc", str(doc)])
    codec_rows = [line for line in doc.read_text().splitlines() if line.startswith("| codec |")]
    assert codec_rows
    (tmp_path / "out" / "codec.json").unlink()
    table.main(["--out-dir", str(tmp_path / "out"), "--doc", str(doc), "--keep"])
    assert [line for line in doc.read_text().splitlines() if line.startswith("| codec |")] == codec_rows
    assert "| append | - | not run |" in doc.read_text()
    # Without --keep, a benchmark without its JSON is "not run".
    table.main(["--out-dir", str(tmp_path / "out"), "--doc", str(doc)])
    assert "| codec | - | not run |" in doc.read_text()


# What bench/packing.py writes (one workload of three, the seed sweep shortened).
PACKING: dict[str, Any] = {
    "benchmark": "packing", "target": "nodes used with NodeScoring all <= 1.02 x online first-fit's",
    "workloads": {
        "issue_200": {
            "description": "200 nodes, 300 jobs of 1-8 allocs, CPU binds", "nodes": 200, "jobs": 300,
            "allocs": 1351, "cpu_share": 0.599, "memory_share": 0.401, "first_fit": 125,
            "first_fit_decreasing": 127, "all": {"nodes_used": 126, "placed": 1351, "ms_per_job": 4.93},
            "limit": {"nodes_used": 137, "placed": 1351, "ms_per_job": 3.15},
            "all_vs_first_fit": 1.008, "limit_vs_first_fit": 1.096,
        },
        "mixed_200": {
            "description": "200 nodes, 240 jobs, CPU-heavy and memory-heavy mixed", "nodes": 200,
            "jobs": 240, "allocs": 1104, "cpu_share": 0.702, "memory_share": 0.7, "first_fit": 150,
            "first_fit_decreasing": 165, "all": {"nodes_used": 155, "placed": 1104, "ms_per_job": 4.28},
            "limit": {"nodes_used": 162, "placed": 1104, "ms_per_job": 4.35},
            "all_vs_first_fit": 1.033, "limit_vs_first_fit": 1.08,
        },
    },
    "issue_200_other_seeds": {"seeds": 2, "all_vs_first_fit": [1.0, 1.024], "median": 1.012, "max": 1.024},
}  # fmt: skip


def test_the_packing_rows(tmp_path: Path) -> None:
    """Nodes used per workload against first-fit, the ratio held to 1.02; a workload the run
    left out is not measured; the scheduler's interleaved pair of NodeScoring all and limit."""
    scheduler = json.loads(json.dumps(SCHEDULER))
    scheduler["headline"]["node_scoring_5000_nodes_1000_allocs"] = {
        "rounds": 7, "ms_per_eval_all": 41.2, "ms_per_eval_limit": 48.9, "ratio": 0.84,
    }  # fmt: skip
    _write(tmp_path, packing=PACKING, scheduler=scheduler)
    rows = table.rows(tmp_path)
    packing = [r for r in rows if r[0] == "packing"]
    assert packing[0][1:5] == [
        "200 nodes, 1,351 allocs, 60% CPU: nodes used, every node scored", "126 nodes", "none", "-",
    ]  # fmt: skip
    assert [r[2] for r in packing[1:4]] == ["137 nodes", "125 nodes", "127 nodes"]
    assert packing[4][1:5] == ["every node scored against first-fit", "1.008 x", "<= 1.02 x", "yes"]
    assert packing[5][2] == "not measured"  # large_1000 not in this run
    assert packing[14][1:5] == ["every node scored against first-fit", "1.033 x", "<= 1.02 x", "no"]
    pair = _row(rows, "scheduler", "every node scored against the limit, interleaved")
    assert pair[2:5] == ["0.84 x", "<= 1.3 x", "yes"]
    assert _row(rows, "scheduler", "the same with Nomad's limit (NodeScoring limit)")[2] == "48.9 ms per eval"


def _request_kind(api: float, asgi: float, fastapi: float) -> dict[str, Any]:
    return {"requests_per_s": 900, "api_cpu_ms_per_request": api,
            "asgi": {"requests_per_s": 3000, "api_cpu_ms_per_request": asgi}, "x_asgi": round(api / asgi, 2),
            "fastapi": {"requests_per_s": 2000, "api_cpu_ms_per_request": fastapi},
            "x_fastapi": round(api / fastapi, 2)}  # fmt: skip


def test_the_requests_rows(tmp_path: Path) -> None:
    kinds = ("node", "job", "allocs_1000", "unknown_job", "blocking_node", "heartbeat")
    report = {"benchmark": "requests", "threads": 4, "requests": 500, "idle_api_cpu_ms_per_s": 5.0,
              **{k: _request_kind(0.6, 0.05, 0.2) for k in kinds}}  # fmt: skip
    report["heartbeat"] = _request_kind(0.35, 0.05, 0.2)
    _write(tmp_path, requests=report)
    rows = table.rows(tmp_path)
    assert _row(rows, "requests", "a node's document: API CPU")[2] == "0.6 ms per request"
    node_x = rows[rows.index(_row(rows, "requests", "a node's document: API CPU")) + 1]
    assert node_x[1:5] == ["the same over the one-route FastAPI floor's", "3.0 x", "<= 2 x", "no"]
    beat = rows.index(_row(rows, "requests", "a node's heartbeat: API CPU"))
    assert rows[beat + 1][2:5] == ["1.75 x", "<= 2 x", "yes"]
    assert rows[beat + 2][1:5] == ["the same over the bare ASGI floor's", "7.0 x", "none", "-"]
    # The list has no target.
    listed = rows.index(_row(rows, "requests", "a list of 1,000 allocs: API CPU"))
    assert rows[listed + 1][3:5] == ["none", "-"]
