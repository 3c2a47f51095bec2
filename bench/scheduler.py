"""Scheduler benchmark: Nomad's own matrix (scheduler/benchmarks), run on the pure core.

For each cluster size, rack count and job size, with and without spread, one service eval is
scheduled against a fresh cluster; we report ms per eval, microseconds per placement and, for
spread jobs, the spread error (largest deviation of any attribute value from its ideal count).
The headline spread case is also run with no limit (every feasible node scored) to compare time
and spread quality; the 5,000-node, 1,000-alloc case runs with NodeScoring all (the default
under binpack) beside Nomad's limit, interleaved.

    python -m bench.scheduler --out bench/out/scheduler.json [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from drover.model import (
    DriverInfo,
    Evaluation,
    Job,
    Node,
    NodeCpuResources,
    NodeDiskResources,
    NodeMemoryResources,
    NodeResources,
    Resources,
    Spread,
    Task,
    TaskGroup,
)
from drover.model.canonicalize import canonicalize
from drover.model.network import NetworkResource, NodeNetworkAddress, NodeNetworkResource, Port
from drover.model.schedulerconfig import SchedulerConfiguration
from drover.scheduler import InMemoryState, schedule

NOW = 1_700_000_000_000_000_000


def build_cluster(nodes: int, racks: int) -> InMemoryState:
    """Nomad's benchmark cluster: two datacenters, `racks` racks in meta, 32 GB nodes, each with
    a host network on one address (as an agent fingerprints it; the default port range)."""
    state = InMemoryState()
    for i in range(nodes):
        ip = f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"
        state.upsert_node(
            Node(
                id=f"node-{i:05d}",
                name=f"node-{i:05d}",
                datacenter=("dc-1", "dc-2")[i % 2],
                meta={"rack": f"r{i % racks}"},
                attributes={"kernel.name": "linux", "cpu.arch": "amd64", "unique.hostname": f"host-{i}"},
                drivers={"mock": DriverInfo(), "docker": DriverInfo()},
                node_resources=NodeResources(
                    cpu=NodeCpuResources(cpu_shares=14_000, total_cpu_cores=4),
                    memory=NodeMemoryResources(memory_mb=32_000),
                    disk=NodeDiskResources(disk_mb=100 * 1024),
                    networks=[NetworkResource(mode="host", device="eth0", ip=ip)],
                    node_networks=[
                        NodeNetworkResource(
                            device="eth0", addresses=[NodeNetworkAddress(alias="default", address=ip)]
                        )
                    ],
                ),
            )
        )
    state.bump(nodes)
    return state


def build_job(count: int, spreads: list[str], ports: int = 0) -> Job:
    networks = [NetworkResource(dynamic_ports=[Port(label=f"p{i}") for i in range(ports)])] if ports else []
    return canonicalize(
        Job(
            id="bench",
            type="service",
            datacenters=["dc-1", "dc-2"],
            spreads=[Spread(attribute=a) for a in spreads],
            task_groups=[
                TaskGroup(
                    name="web",
                    count=count,
                    networks=networks,
                    tasks=[Task(name="web", driver="docker", resources=Resources(cpu=6000, memory_mb=6000))],
                )
            ],
        )
    )


def spread_error(state: InMemoryState, placed: list[Any], attribute: str, racks: int) -> float:
    """Largest |allocs on a value - ideal| over the attribute's values."""
    counts: Counter[str] = Counter()
    for a in placed:
        node = state.node(a.node_id)
        assert node is not None
        counts[node.datacenter if attribute == "${node.datacenter}" else node.meta["rack"]] += 1
    values = 2 if attribute == "${node.datacenter}" else racks
    ideal = len(placed) / values
    all_values = list(counts.values()) + [0] * (values - len(counts))
    return max(abs(c - ideal) for c in all_values)


def run_case(
    nodes: int,
    racks: int,
    count: int,
    spreads: list[str],
    repeats: int,
    full_scan: bool = False,
    ports: int = 0,
    node_scoring: str = "",
) -> dict[str, Any]:
    state = build_cluster(nodes, racks)
    if node_scoring:
        state.set_scheduler_config(SchedulerConfiguration(node_scoring=node_scoring))
    job = build_job(count, spreads, ports)
    state.upsert_job(job)
    # The state is kept out of the cyclic collector, as the services' tuned collector keeps
    # their replica (drover.runtime.pyheap): a full collection over it (~80 ms with 10,000
    # nodes) would otherwise land in whichever eval the allocation count happened to reach it.
    gc.collect()
    gc.freeze()
    times: list[float] = []
    result = None
    for r in range(repeats):
        evaluation = Evaluation(
            id=f"eval-{r}", job_id=job.id, type="service", triggered_by="job-register", priority=50
        )
        t0 = time.perf_counter()
        result = schedule(state, evaluation, NOW, full_scan=full_scan)
        times.append(time.perf_counter() - t0)
    gc.unfreeze()
    assert result is not None
    placed = result.plan.placements()
    ms = statistics.median(times) * 1000
    out: dict[str, Any] = {
        "nodes": nodes,
        "racks": racks,
        "allocs": count,
        "spread": spreads,
        "full_scan": full_scan,
        "node_scoring": node_scoring
        or ("all" if state.config_for_pool("default").scores_every_node() else "limit"),
        "dynamic_ports": ports,
        "placed": len(placed),
        "ms_per_eval": round(ms, 2),
        "us_per_placement": round(ms * 1000 / max(len(placed), 1), 1),
        "repeats": repeats,
    }
    if spreads:
        out["spread_error"] = {a: spread_error(state, placed, a, racks) for a in spreads}
    return out


def ports_pair(rounds: int = 7) -> dict[str, Any]:
    """The 5,000-node, 1,000-alloc case with one dynamic port per alloc beside the same case
    without ports, in interleaved rounds (this machine's speed drifts), each case in a fresh
    process and the order alternating from round to round: medians of each. A round's figure
    is the median of three evals (a worker's replica keeps what the first works out about the
    nodes)."""
    without: list[float] = []
    with_ports: list[float] = []
    placed = 0
    for r in range(rounds):
        for ports in (0, 1) if r % 2 == 0 else (1, 0):
            case = _case_in_a_process(5000, 50, 1000, ports)
            (with_ports if ports else without).append(case["ms_per_eval"])
            placed = case["placed"] if ports else placed
    a, b = statistics.median(without), statistics.median(with_ports)
    return {
        "ports_5000_nodes_1000_allocs": {
            "rounds": rounds,
            "placed": placed,
            "ms_per_eval_no_ports": round(a, 2),
            "ms_per_eval_one_dynamic_port": round(b, 2),
            "ratio": round(b / a, 2),
        }
    }


def node_scoring_pair(rounds: int = 7) -> dict[str, Any]:
    """The 5,000-node, 1,000-alloc case with every feasible node scored (NodeScoring all, the
    default under binpack) beside Nomad's limit (NodeScoring limit, the scheduler before it),
    interleaved as `ports_pair`: fresh processes, the order alternating, medians."""
    times: dict[str, list[float]] = {"all": [], "limit": []}
    for r in range(rounds):
        for scoring in ("all", "limit") if r % 2 == 0 else ("limit", "all"):
            times[scoring].append(_case_in_a_process(5000, 50, 1000, 0, scoring)["ms_per_eval"])
    every, limit = statistics.median(times["all"]), statistics.median(times["limit"])
    return {
        "node_scoring_5000_nodes_1000_allocs": {
            "rounds": rounds,
            "ms_per_eval_all": round(every, 2),
            "ms_per_eval_limit": round(limit, 2),
            "ratio": round(every / limit, 2),
        }
    }


def _case_in_a_process(
    nodes: int, racks: int, count: int, ports: int, node_scoring: str = ""
) -> dict[str, Any]:
    code = (
        "import json; from bench.scheduler import run_case; "
        f"print(json.dumps(run_case({nodes}, {racks}, {count}, [], repeats=3, ports={ports}, "
        f"node_scoring={node_scoring!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/scheduler.json")
    ap.add_argument("--quick", action="store_true", help="only the headline cases")
    args = ap.parse_args()

    cases: list[dict[str, Any]] = []
    matrix_nodes = [500, 1000, 5000, 10000]
    matrix_racks = [25, 50, 75]
    matrix_allocs = [50, 300, 600, 900, 1200]
    if args.quick:
        matrix_nodes, matrix_racks, matrix_allocs = [10000], [50], [1200]
    for nodes in matrix_nodes:
        for racks in matrix_racks:
            for count in matrix_allocs:
                for spreads in ([], ["${meta.rack}"]):
                    c = run_case(nodes, racks, count, spreads, repeats=3 if nodes <= 1000 else 1)
                    cases.append(c)
                    print(json.dumps(c), flush=True)

    headline = {
        "spread_10000_nodes_1200_allocs_dc_and_rack": run_case(
            10000, 50, 1200, ["${node.datacenter}", "${meta.rack}"], repeats=3
        ),
        "spread_10000_nodes_1200_allocs_dc_and_rack_no_limit": run_case(
            10000, 50, 1200, ["${node.datacenter}", "${meta.rack}"], repeats=1, full_scan=True
        ),
        "no_spread_5000_nodes_1000_allocs": run_case(5000, 50, 1000, [], repeats=3),
        # A small job on a large cluster (the pipeline's count-10 probes): the median is an
        # eval after the first, which finds the ready nodes cached as a worker's replica does.
        "no_spread_5000_nodes_10_allocs": run_case(5000, 50, 10, [], repeats=21),
    }
    headline.update(ports_pair())
    headline.update(node_scoring_pair())
    for k, v in headline.items():
        print(k, json.dumps(v), flush=True)
    report = {
        "benchmark": "scheduler",
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor(),
            "cores": __import__("os").cpu_count(),
        },
        "targets": {
            "spread_10000_nodes_1200_allocs_dc_and_rack": "ms_per_eval < 1000 and spread_error <= 1",
            "no_spread_5000_nodes_1000_allocs": "ms_per_eval < 300",
            "ports_5000_nodes_1000_allocs": "ratio (one dynamic port / none) <= 1.5",
            "node_scoring_5000_nodes_1000_allocs": "ratio (NodeScoring all / limit) <= 1.3",
        },
        "headline": headline,
        "matrix": cases,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
