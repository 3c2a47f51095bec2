"""The figures table of docs/performance.md, rewritten from the benchmarks' JSON.

    python -m bench.table [--out-dir bench/out] [--doc docs/performance.md]

`make bench` runs it last. It reads bench/out/<name>.json for every benchmark below and
replaces what lies between FIGURES_BEGIN and FIGURES_END in the doc with one markdown table:
benchmark, figure, measured value, target, met, and when the JSON file was written (its
modification time, UTC). Every value is read from the JSON as the benchmark wrote it (the one
exception, marked "largest", picks the largest of a benchmark's per-service values); a
benchmark without its JSON gets a row saying "not run", a figure absent from the JSON (or
null: the pipeline run with --no-probes) says "not measured". Each figure's target is kept
here beside it: those the benchmarks record in their JSON (`targets`, `target`) and the
project's issues name; a figure without one says "none".
"""

from __future__ import annotations

import argparse
import json
import operator
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FIGURES_BEGIN = "<!-- figures:begin -->"
FIGURES_END = "<!-- figures:end -->"

# A key into the JSON: a member's name, or (member, value) for the item of a list whose
# member has that value (memory's run at 1,000,000 allocs).
Key = str | tuple[str, int]

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "=": operator.eq,
}


@dataclass(frozen=True)
class Figure:
    label: str  # may name the JSON's top-level members: "{nodes} nodes"
    path: tuple[Key, ...]
    unit: str
    target: tuple[str, float] | None = None  # (one of OPS, bound)
    largest: bool = False  # the path leads to an object of values: show the largest


S10K = ("headline", "spread_10000_nodes_1200_allocs_dc_and_rack")
S10K_ALL = ("headline", "spread_10000_nodes_1200_allocs_dc_and_rack_no_limit")
CODEC = ("per_alloc", "columns_metrics_apart")
PLAN_1000 = ("idle", "plan_1000_allocs")

SCORING = ("headline", "node_scoring_5000_nodes_1000_allocs")
# bench/packing.py's workloads and how the table names them.
PACKING_WORKLOADS = (
    ("issue_200", "200 nodes, 1,351 allocs, 60% CPU"),
    ("large_1000", "1,000 nodes, 6,755 allocs, 60% CPU"),
    ("mixed_200", "200 nodes, CPU- and memory-heavy jobs, 70%"),
)


# bench/requests.py's kinds, how the table names them, and the target on the API's CPU per
# request over the one-route FastAPI floor's (single-object reads and heartbeats: at most 2x).
REQUEST_KINDS: tuple[tuple[str, str, float | None], ...] = (
    ("node", "a node's document", 2),
    ("job", "a job's document", 2),
    ("allocs_1000", "a list of 1,000 allocs", None),
    ("unknown_job", "an unknown job (404)", None),
    ("blocking_node", "a blocking query on a node, woken by a change", None),
    ("heartbeat", "a node's heartbeat", 2),
)


def _request(kind: str, label: str, target: float | None) -> list[Figure]:
    """One kind of request: the API's CPU per request, and over each floor's."""
    return [
        Figure(f"{label}: API CPU", (kind, "api_cpu_ms_per_request"), "ms per request"),
        Figure(
            "the same over the one-route FastAPI floor's",
            (kind, "x_fastapi"),
            "x",
            None if target is None else ("<=", target),
        ),
        Figure("the same over the bare ASGI floor's", (kind, "x_asgi"), "x"),
    ]


def _packing(name: str, label: str) -> list[Figure]:
    """Nodes used on one workload: every node scored, Nomad's limit, first-fit, FFD; and the
    ratio to first-fit the issue's target holds."""
    w = ("workloads", name)
    return [
        Figure(f"{label}: nodes used, every node scored", (*w, "all", "nodes_used"), "nodes"),
        Figure("the same, Nomad's limit", (*w, "limit", "nodes_used"), "nodes"),
        Figure("the same, online first-fit", (*w, "first_fit"), "nodes"),
        Figure("the same, first-fit-decreasing", (*w, "first_fit_decreasing"), "nodes"),
        Figure("every node scored against first-fit", (*w, "all_vs_first_fit"), "x", ("<=", 1.02)),
    ]


FIGURES: dict[str, list[Figure]] = {
    "scheduler": [
        Figure(
            "10,000 nodes, 1,200 allocs, spread on dc + rack",
            (*S10K, "ms_per_eval"),
            "ms per eval",
            ("<", 1000),
        ),
        Figure(
            "the same: spread error on dc", (*S10K, "spread_error", "${node.datacenter}"), "allocs", ("<=", 1)
        ),
        Figure(
            "the same: spread error on rack", (*S10K, "spread_error", "${meta.rack}"), "allocs", ("<=", 1)
        ),
        Figure("the same, scoring every feasible node", (*S10K_ALL, "ms_per_eval"), "ms per eval"),
        Figure(
            "5,000 nodes, 1,000 allocs",
            ("headline", "no_spread_5000_nodes_1000_allocs", "ms_per_eval"),
            "ms per eval",
            ("<", 300),
        ),
        Figure(
            "5,000 nodes, 10 allocs",
            ("headline", "no_spread_5000_nodes_10_allocs", "ms_per_eval"),
            "ms per eval",
        ),
        Figure(
            "5,000 nodes, 1,000 allocs, one dynamic port each",
            ("headline", "ports_5000_nodes_1000_allocs", "ms_per_eval_one_dynamic_port"),
            "ms per eval",
        ),
        Figure(
            "the same against no ports, interleaved",
            ("headline", "ports_5000_nodes_1000_allocs", "ratio"),
            "x",
            ("<=", 1.5),
        ),
        Figure(
            "5,000 nodes, 1,000 allocs, every node scored (NodeScoring all)",
            (*SCORING, "ms_per_eval_all"),
            "ms per eval",
        ),
        Figure(
            "the same with Nomad's limit (NodeScoring limit)", (*SCORING, "ms_per_eval_limit"), "ms per eval"
        ),
        Figure("every node scored against the limit, interleaved", (*SCORING, "ratio"), "x", ("<=", 1.3)),
    ],
    "packing": [figure for name, label in PACKING_WORKLOADS for figure in _packing(name, label)],
    "codec": [
        Figure("1,000-alloc plan: relayed", (*CODEC, "relayed_bytes_per_alloc"), "bytes per alloc"),
        Figure("1,000-alloc plan: stored", (*CODEC, "stored_bytes_per_alloc"), "bytes per alloc"),
        Figure("1,000-alloc plan: encoded for the log", (*CODEC, "store_encode_us"), "us per alloc"),
        Figure("1,000-alloc plan: followed by a replica", (*CODEC, "replica_follow_us"), "us per alloc"),
        Figure("1,000-alloc plan: followed by the broker", (*CODEC, "broker_follow_us"), "us per alloc"),
        Figure("1,000-alloc plan: decoded in full", (*CODEC, "full_decode_us"), "us per alloc"),
        Figure("1,000-alloc plan request: decoded", (*CODEC, "plan_request_decode_us"), "us per alloc"),
    ],
    "append": [
        Figure("events lock held, 1,000-alloc plan, idle (median)", (*PLAN_1000, "lock_held_ms"), "ms"),
        Figure("events lock held, 1,000-alloc plan, idle (longest)", (*PLAN_1000, "lock_held_max_ms"), "ms"),
        Figure("whole append, 1,000-alloc plan, idle", (*PLAN_1000, "append_ms"), "ms"),
        Figure(
            "events lock held, 1,000-alloc plan, beside a busy thread",
            ("beside_busy_thread", "plan_1000_allocs", "lock_held_ms"),
            "ms",
        ),
        Figure("events lock held, 10-alloc plan, idle", ("idle", "plan_10_allocs", "lock_held_ms"), "ms"),
        Figure("events lock held, job register, idle", ("idle", "job_register", "lock_held_ms"), "ms"),
    ],
    "pipeline": [
        Figure(
            "{jobs} jobs x {count} allocs on {nodes} nodes",
            ("placements_per_s",),
            "placements/s",
            (">=", 5000),
        ),
        Figure(
            "count-10 job under that load, register to placed, p50",
            ("probe_register_to_placed_ms", "p50"),
            "ms",
            ("<", 50),
        ),
        Figure(
            "count-10 job under that load, register to placed, p99",
            ("probe_register_to_placed_ms", "p99"),
            "ms",
        ),
        Figure("count-10 job's register request, p50", ("probe_register_request_ms_p50",), "ms"),
        Figure("machine CPU during the load", ("cpu_s_during_load", "machine"), "CPU-s"),
        Figure("peak RSS, largest service", ("peak_rss_mb",), "MB", largest=True),
        Figure("nodes missed", ("nodes_missed",), "nodes", ("=", 0)),
        Figure("host speed: 5,000-node, 1,000-alloc eval", ("host_reference_eval_ms",), "ms"),
    ],
    "pipeline_gc": [
        Figure(
            "the same, bench/gc.py's log seeded and a forced collection from the load's start",
            ("placements_per_s",),
            "placements/s",
            (">=", 5000),
        ),
        Figure(
            "the same: count-10 job, register to placed, p50",
            ("probe_register_to_placed_ms", "p50"),
            "ms",
            ("<", 50),
        ),
        Figure(
            "the same: count-10 job, register to placed, p99", ("probe_register_to_placed_ms", "p99"), "ms"
        ),
        Figure("the collection: PUT /v1/system/gc to its core eval complete", ("gc", "complete_s"), "s"),
        Figure(
            "the seeded jobs, evals, allocs and nodes left after it",
            ("garbage", "left_total"),
            "objects",
            ("=", 0),
        ),
        Figure("machine CPU during the load", ("cpu_s_during_load", "machine"), "CPU-s"),
        Figure("host speed: 5,000-node, 1,000-alloc eval", ("host_reference_eval_ms",), "ms"),
    ],
    "memory": [
        Figure(
            "replica at 1,000,000 allocs: peak RSS",
            ("replica", ("allocs", 1_000_000), "peak_rss_mb"),
            "MB",
            ("<", 800),
        ),
        Figure(
            "replica at 1,000,000 allocs: applied",
            ("replica", ("allocs", 1_000_000), "allocs_applied_per_s"),
            "allocs/s",
        ),
        Figure(
            "the same, per CPU-second of the whole load (building the log included)",
            ("replica", ("allocs", 1_000_000), "allocs_applied_per_cpu_s"),
            "allocs/CPU-s",
        ),
        Figure(
            "the replica's own decoding and applying, CPU",
            ("replica", ("allocs", 1_000_000), "replica_us_per_alloc"),
            "us per alloc",
        ),
        Figure("replica: memory per alloc", ("mb_per_100k_allocs",), "MB per 100,000 allocs"),
        Figure(
            "peak RSS at 1,000,000 allocs against the code before (interleaved pairs)",
            ("against_baseline", "peak_rss_mb"),
            "x",
        ),
        Figure(
            "applied per CPU-second against the code before (interleaved pairs)",
            ("against_baseline", "allocs_applied_per_cpu_s"),
            "x",
            (">=", 0.9),
        ),
        Figure(
            "the replica's own CPU per alloc against the code before (interleaved pairs)",
            ("against_baseline", "replica_us_per_alloc"),
            "x",
            ("<=", 1.1),
        ),
    ],
    "heartbeats": [
        Figure("drover sim at {nodes} nodes: heartbeats", ("sim", "heartbeats_per_s"), "per s"),
        Figure("drover sim at {nodes} nodes: CPU", ("sim", "cpu_fraction_of_one_core"), "cores", ("<", 1)),
        Figure("leader (heartbeater): CPU", ("leader_cpu_fraction_of_one_core",), "cores"),
        Figure("nodes marked down while beating", ("nodes_down_while_beating",), "nodes", ("=", 0)),
        Figure("last heartbeat to down, p50", ("last_heartbeat_to_down_s", "p50"), "s"),
        Figure("last heartbeat to down, p99", ("last_heartbeat_to_down_s", "p99"), "s"),
        Figure("down beyond TTL + grace, p50", ("beyond_ttl_plus_grace_s", "p50"), "s"),
        Figure("down beyond TTL + grace, p99", ("beyond_ttl_plus_grace_s", "p99"), "s"),
    ],
    "fleet": [
        Figure(
            "{nodes} nodes in {sims} drover sim processes, {topology} topology: registered",
            ("registered_s",),
            "s",
        ),
        Figure("heartbeats", ("heartbeats_per_s",), "per s"),
        Figure(
            "leader (heartbeater) CPU while the fleet beats",
            ("beating_alone", "leader_cpu_fraction_of_one_core"),
            "cores",
        ),
        Figure("API CPU while the fleet beats", ("beating_alone", "api_cpu_fraction_of_one_core"), "cores"),
        Figure("10 jobs x 1,000 allocs on the fleet", ("placement", "placements_per_s"), "placements/s"),
        Figure("nodes marked down while beating", ("nodes_down_while_beating",), "nodes", ("=", 0)),
    ],
    "pipeline_ha": [
        Figure(
            "{jobs} jobs x {count} allocs on {nodes} nodes, single servers (median of {pairs})",
            ("single_placements_per_s",),
            "placements/s",
        ),
        Figure("the same, HA topology (interleaved)", ("ha_placements_per_s",), "placements/s"),
        Figure("HA over single", ("ha_over_single",), "x"),
        Figure("nodes missed, both arms", ("nodes_missed",), "nodes", ("=", 0)),
    ],
    "watchers": [
        Figure(
            "{nodes} waiting clients, {jobs} jobs: register to seen by the node, p50",
            ("register_to_seen_by_node_ms", "p50"),
            "ms",
        ),
        Figure("the same, p99", ("register_to_seen_by_node_ms", "p99"), "ms"),
        Figure("answers to waiting clients", ("answers_per_position",), "per log position"),
        Figure("API CPU during the load", ("cpu_s_during_load", "api"), "CPU-s"),
    ],
    "requests": [figure for kind, label, target in REQUEST_KINDS for figure in _request(kind, label, target)]
    + [Figure("a node's document, {threads} threads", ("node", "requests_per_s"), "requests/s")],
    "restarts": [
        Figure(
            "{count} allocs on {nodes} sim nodes, batches of {batch_size}: the whole restart",
            ("total_s",),
            "s",
            ("<", 15),
        ),
        Figure(
            "control plane between batches (last Started to next signal), p50",
            ("control_plane_ms_per_batch", "p50"),
            "ms",
            ("<", 100),
        ),
        Figure("the same, max", ("control_plane_ms_per_batch", "max"), "ms", ("<", 100)),
        Figure("of which the client's report, p50", ("client_report_ms", "p50"), "ms"),
        Figure(
            "of which the control plane's own (the report in the log to the next signal), p50",
            ("report_to_signal_ms", "p50"),
            "ms",
            ("<", 100),
        ),
        Figure("the same, max", ("report_to_signal_ms", "max"), "ms", ("<", 100)),
        Figure("leader CPU during the restart", ("leader_cpu_s",), "CPU-s"),
        Figure("allocs signalled exactly once", ("allocs_signalled_once",), "allocs", ("=", 5000)),
        Figure("host speed: 5,000-node, 1,000-alloc eval", ("host_reference_eval_ms",), "ms"),
    ],
    "events": [
        Figure(
            "{subscribers} subscribers to * during the pipeline's load: subscribers short of the log",
            ("subscribers_short",),
            "subscribers",
            ("=", 0),
        ),
        Figure("events in the window, from the log", ("log_events",), "events"),
        Figure("lag, commit to arrival at a subscriber, p50", ("lag_ms", "p50"), "ms"),
        Figure("the same, p99", ("lag_ms", "p99"), "ms", ("<", 1000)),
        Figure("API CPU per subscriber during the load", ("api_cpu_s_per_subscriber",), "CPU-s"),
        Figure(
            "pipeline with subscribers, against without",
            ("throughput_ratio",),
            "of the placements/s",
            (">=", 0.9),
        ),
        Figure("pipeline with subscribers", ("placements_per_s", "with"), "placements/s"),
        Figure("pipeline without subscribers", ("placements_per_s", "without"), "placements/s"),
        Figure("the subscribers' own CPU during the load", ("subscribers_cpu_s",), "CPU-s"),
        Figure(
            "floor: the same bytes from a server that only writes them, against without",
            ("floor", "throughput_ratio"),
            "of the placements/s",
        ),
        Figure("floor: its server's CPU during the load", ("floor", "server_cpu_s"), "CPU-s"),
        Figure(
            "API CPU per subscriber over the floor's server's",
            ("api_cpu_per_subscriber_x_floor",),
            "x",
            ("<=", 2),
        ),
        Figure("host speed: 5,000-node, 1,000-alloc eval", ("pipeline_with", "host_reference_eval_ms"), "ms"),
    ],
    "gc": [
        Figure(
            "{allocs} allocs, {evals} evals, {jobs} jobs collected: the whole collection", ("total_s",), "s"
        ),
        Figure(
            "events lock held by a collecting append ({chunk} objects), longest",
            ("lock_held_ms", "max"),
            "ms",
            ("<", 50),
        ),
        Figure("the same, p50", ("lock_held_ms", "p50"), "ms"),
        Figure("whole collecting append, longest", ("append_ms", "max"), "ms"),
        Figure("appends", ("appends",), "appends"),
        Figure("host speed: 5,000-node, 1,000-alloc eval", ("host_reference_eval_ms",), "ms"),
    ],
    "recovery": [
        Figure(
            "{jobs} jobs of count {count} on {nodes} nodes, 8 services killed -9 as they are placed: "
            "first kill to every alloc placed, no eval pending",
            ("converged_after_first_kill_s",),
            "s",
        ),
        Figure("allocs placed", ("allocs_placed",), "allocs"),
    ],
    "templates": [
        Figure(
            "{watchers} templates on `nomadService` of {count} registrations, one removed: blocking queries answered, p50",
            ("woken_ms", "p50"),
            "ms",
        ),
        Figure("the same, p99", ("woken_ms", "p99"), "ms"),
        Figure("rendered again, p99 (the renders share one client process)", ("rerendered_ms", "p99"), "ms"),
        Figure("API CPU for the fan-out", ("api_cpu_s",), "CPU-s"),
    ],
    "ui": [
        Figure(
            "web console, 10,000 jobs / 5,000 nodes / 100,000 allocs: the jobs page, API CPU",
            ("pages", "jobs", "api_cpu_ms"),
            "ms",
            ("<", 50),
        ),
        Figure(
            "the jobs page filtered by status (every job's derived), API CPU",
            ("pages", "jobs (status=pending)", "api_cpu_ms"),
            "ms",
            ("<", 50),
        ),
        Figure("the same, PostgreSQL's CPU", ("pages", "jobs (status=pending)", "db_cpu_ms"), "ms"),
        Figure("a job's page, API CPU", ("pages", "job", "api_cpu_ms"), "ms", ("<", 50)),
        Figure("the nodes page, API CPU", ("pages", "nodes", "api_cpu_ms"), "ms", ("<", 50)),
        Figure("the overview, API CPU", ("pages", "overview", "api_cpu_ms"), "ms", ("<", 50)),
        Figure(
            "the overview, PostgreSQL's CPU (counts over every alloc)",
            ("pages", "overview", "db_cpu_ms"),
            "ms",
        ),
        Figure(
            "the topology (every client and alloc drawn), API CPU",
            ("pages", "topology", "api_cpu_ms"),
            "ms",
            ("<", 50),
        ),
        Figure(
            "the topology after an alloc moved (the rows changed read, two boxes drawn again), API CPU",
            ("pages", "topology (after an alloc moved)", "api_cpu_ms"),
            "ms",
            ("<", 50),
        ),
        Figure("the same, PostgreSQL's CPU", ("pages", "topology (after an alloc moved)", "db_cpu_ms"), "ms"),
        Figure(
            "the topology's first page of an API process (every alloc's document read), API CPU",
            ("pages", "topology (first read)", "api_cpu_ms"),
            "ms",
        ),
        Figure(
            "Chromium: navigation to the topology drawn, 5,000 clients (worst of 3)",
            ("pages", "topology in the browser", "drawn_ms_worst"),
            "ms",
            ("<", 1000),
        ),
    ],
    "uifanout": [
        Figure(
            "{tabs} console tabs on the jobs page, one event: its fragment pushed down every tab's event stream, API CPU",
            ("pages", "jobs", "push_api_cpu_ms"),
            "ms",
            ("<", 20),
        ),
        Figure(
            "the same, from the append to the last tab's fragment (wall)",
            ("pages", "jobs", "push_wall_ms"),
            "ms",
        ),
        Figure(
            "{tabs} tabs on a job's page (three fragments each touched), API CPU",
            ("pages", "job", "push_api_cpu_ms"),
            "ms",
            ("<", 20),
        ),
        Figure("the same, wall", ("pages", "job", "push_wall_ms"), "ms"),
    ],
    "docker": [
        Figure("{count} docker allocs on one agent: started", ("containers_per_s",), "containers/s"),
        Figure("the agent's CPU per container started", ("agent_cpu_ms_per_container",), "ms"),
        Figure("the engine's CPU (dockerd, containerd) for them all", ("dockerd_cpu_s",), "CPU-s"),
        Figure("job stop to the last container removed", ("stop_s",), "s"),
    ],
}

HEADER = ("benchmark", "figure", "measured", "target", "met", "date")


def lookup(data: Any, path: Sequence[Key]) -> Any:
    """The value at `path`, or None where the JSON has nothing there."""
    for key in path:
        if isinstance(key, tuple):
            name, want = key
            items = data if isinstance(data, list) else []
            data = next((i for i in items if isinstance(i, dict) and i.get(name) == want), None)
        else:
            data = data.get(key) if isinstance(data, dict) else None
        if data is None:
            return None
    return data


def number(value: float) -> str:
    """The JSON's number as written, with thousands separators."""
    return f"{value:,}"


def figure_row(name: str, fig: Figure, data: dict[str, Any], date: str) -> list[str]:
    value = lookup(data, fig.path)
    if fig.largest and isinstance(value, dict):
        value = max((v for v in value.values() if isinstance(v, int | float)), default=None)
    params = {
        k: number(v) if isinstance(v, int | float) and not isinstance(v, bool) else v for k, v in data.items()
    }
    try:
        label = fig.label.format(**params)
    except (KeyError, IndexError, ValueError):
        label = fig.label
    target = "none" if fig.target is None else f"{fig.target[0]} {number(fig.target[1])} {fig.unit}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [name, label, "not measured", target, "-", date]
    met = "-" if fig.target is None else ("yes" if OPS[fig.target[0]](value, fig.target[1]) else "no")
    return [name, label, f"{number(value)} {fig.unit}", target, met, date]


def rows(out_dir: Path, kept: dict[str, list[list[str]]] | None = None) -> list[list[str]]:
    """One row per figure of every benchmark whose JSON is in `out_dir`; for every other, the
    rows `kept` holds for it (a partial run keeps the figures, with their dates, of the
    benchmarks it did not run), else one "not run" row."""
    table: list[list[str]] = []
    for name, figures in FIGURES.items():
        path = out_dir / f"{name}.json"
        if not path.exists():
            table.extend((kept or {}).get(name) or [[name, "-", "not run", "-", "-", "-"]])
            continue
        date = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            table.append([name, "-", "unreadable JSON", "-", "-", date])
            continue
        table.extend(figure_row(name, fig, data if isinstance(data, dict) else {}, date) for fig in figures)
    return table


def render(table: list[list[str]]) -> str:
    lines = [HEADER, ("---",) * len(HEADER), *table]
    return "\n".join("| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines)


def current_rows(doc: str) -> dict[str, list[list[str]]]:
    """The rows of the figures table `doc` holds now, by benchmark."""
    start, end = doc.find(FIGURES_BEGIN), doc.find(FIGURES_END)
    out: dict[str, list[list[str]]] = {}
    if start < 0 or end < start:
        return out
    for line in doc[start + len(FIGURES_BEGIN) : end].strip().splitlines()[2:]:
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) == len(HEADER) and cells[2] != "not run":
            out.setdefault(cells[0], []).append(cells)
    return out


def replace_figures(doc: str, table: str) -> str:
    """`doc` with what lies between the markers replaced by `table`."""
    start, end = doc.find(FIGURES_BEGIN), doc.find(FIGURES_END)
    if start < 0 or end < start:
        raise ValueError(f"the doc needs {FIGURES_BEGIN} and then {FIGURES_END}")
    return doc[: start + len(FIGURES_BEGIN)] + "\n" + table + "\n" + doc[end:]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out-dir", type=Path, default=Path("bench/out"))
    ap.add_argument("--doc", type=Path, default=Path("docs/performance.md"))
    ap.add_argument(
        "--keep", action="store_true", help="keep the doc's rows of benchmarks whose JSON is not there"
    )
    args = ap.parse_args(argv)
    known = {f"{name}.json" for name in FIGURES}
    for extra in sorted(p.name for p in args.out_dir.glob("*.json") if p.name not in known):
        print(f"bench.table: no figures known for {args.out_dir / extra}", file=sys.stderr)
    kept = current_rows(args.doc.read_text()) if args.keep else None
    table = render(rows(args.out_dir, kept))
    try:
        args.doc.write_text(replace_figures(args.doc.read_text(), table))
    except ValueError as e:
        raise SystemExit(f"bench.table: {args.doc}: {e}") from None
    print(table)
    print(f"wrote the figures table into {args.doc}")


if __name__ == "__main__":
    main()
