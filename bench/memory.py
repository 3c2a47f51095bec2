"""Replica memory benchmark: what a service's in-memory replica costs per alloc.

Builds the events a cluster of 5,000 nodes and N allocs (jobs of 1,000) leaves in the log,
stores each the way the event store does (compact JSON), then decodes and applies them exactly
as a replica does (drover.runtime.replica), in a fresh child process per size whose peak RSS is
read from /proc. Reported: peak RSS per size, MB per 100k allocs, and the RSS at 1,000,000.

CPU time is reported beside wall time: the whole load's, and the replica's own decoding and
applying. With --baseline (another checkout, e.g. a `git worktree` of the code before a change),
each size runs --pairs times for either code, interleaved (ABBA), each in a fresh process; the
report holds each code's medians and this code's figures over the baseline's.

    python -m bench.memory --out bench/out/memory.json [--sizes 100000,1000000]
        [--baseline ../before --pairs 3]
    python -m bench.memory --breakdown 20000 [--baseline ../before]   # one alloc, by member
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.report import write

NODES = 5000
PER_JOB = 1000


def build_and_load(allocs: int, walk: bool = False) -> dict[str, Any]:
    """In this process: build `allocs` allocs' worth of events, store-encode, replica-decode,
    apply; report peak RSS (and with `walk`, what one alloc costs, by member: bench/memwalk.py)."""
    from drover.model import (
        Allocation,
        Job,
        Node,
        NodeCpuResources,
        NodeMemoryResources,
        NodeResources,
        Resources,
        Task,
        TaskGroup,
    )
    from drover.model.alloc import AllocMetric, NodeScoreMeta
    from drover.model.canonicalize import canonicalize
    from drover.model.events import (
        JobRegistered,
        NodeRegistered,
        PlanApplied,
        decode_event,
        encode_event_json,
    )
    from drover.model.reducer import apply
    from drover.model.state import InMemoryState
    from drover.runtime.pyheap import tune

    tune()
    state = InMemoryState(drop_metrics=True, owns_events=True)
    pos = 0

    replica_cpu = 0.0  # the replica's own part: decoding and applying, not building the log

    def feed(event: Any) -> None:
        nonlocal pos, replica_cpu
        pos += 1
        data = encode_event_json(event)
        t = time.thread_time()
        apply(state, pos, decode_event(data, replica=True))
        replica_cpu += time.thread_time() - t

    for i in range(NODES):
        feed(
            NodeRegistered(
                node=Node(
                    id=f"node-{i:05d}",
                    name=f"node-{i:05d}",
                    datacenter=f"dc{i % 2}",
                    meta={"rack": f"r{i % 50}"},
                    node_resources=NodeResources(
                        cpu=NodeCpuResources(cpu_shares=400_000),
                        memory=NodeMemoryResources(memory_mb=819_200),
                    ),
                )
            )
        )
    t0, cpu0, replica_cpu = time.perf_counter(), time.process_time(), 0.0
    for j in range(allocs // PER_JOB):
        job = canonicalize(
            Job(
                id=f"job-{j:04d}",
                task_groups=[
                    TaskGroup(
                        name="web",
                        count=PER_JOB,
                        tasks=[Task(name="web", driver="docker", resources=Resources(cpu=100, memory_mb=64))],
                    )
                ],
            )
        )
        feed(JobRegistered(job=job))
        eval_id = str(uuid.uuid4())
        placed = [
            Allocation(
                id=str(uuid.uuid4()),
                eval_id=eval_id,
                name=f"{job.id}.web[{k}]",
                node_id=f"node-{(j * PER_JOB + k) % NODES:05d}",
                node_name=f"node-{(j * PER_JOB + k) % NODES:05d}",
                job_id=job.id,
                task_group="web",
                resources=Resources(cpu=100, memory_mb=64, disk_mb=300),
                metrics=AllocMetric(
                    nodes_evaluated=13,
                    nodes_in_pool=NODES,
                    nodes_available={"dc0": NODES // 2, "dc1": NODES // 2},
                    score_meta_data=[
                        NodeScoreMeta(node_id=f"node-{k:05d}", scores={"binpack": 0.5}, norm_score=0.5)
                    ],
                ),
                create_time=1,
                modify_time=1,
            )
            for k in range(PER_JOB)
        ]
        for c in range(0, PER_JOB, 200):
            feed(PlanApplied(eval_id=eval_id, job_id=job.id, allocs=placed[c : c + 200], at=1))
    load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    out: dict[str, Any] = {
        "allocs": len(state.allocs),
        "nodes": len(state.nodes),
        "peak_rss_mb": round(peak, 1),
        "load_s": round(load_s, 1),
        "allocs_applied_per_s": round(len(state.allocs) / load_s),
        # CPU time, which a busy host changes less than the wall time: the whole load (building,
        # encoding, decoding, applying), and the replica's decoding and applying alone.
        "load_cpu_s": round(load_cpu_s, 2),
        "allocs_applied_per_cpu_s": round(len(state.allocs) / load_cpu_s),
        "replica_cpu_s": round(replica_cpu, 2),
        "replica_us_per_alloc": round(replica_cpu / len(state.allocs) * 1e6, 2),
    }
    if walk:
        from bench.memwalk import breakdown

        out["breakdown"] = breakdown(state)
    return out


def _child(size: int, tree: str | None, walk: bool = False) -> dict[str, Any]:
    """One run in a fresh process; `tree`: another checkout whose libraries it runs instead."""
    env = dict(os.environ)
    if tree is not None:
        src = sorted(glob.glob(f"{tree}/libs/*/src")) + sorted(glob.glob(f"{tree}/services/*/src"))
        env["PYTHONPATH"] = os.pathsep.join([*src, os.getcwd()])
    out = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--child", str(size), *(["--walk"] if walk else [])],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    run: dict[str, Any] = json.loads(out.stdout)
    print(json.dumps({"code": tree or "this", **run}), flush=True)
    return run


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over runs of one size (and how many runs)."""
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    return {**out, "runs": len(runs)}


def _arm(runs: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [_medians(r) for _, r in sorted(runs.items())]


def _paired(sizes: list[int], pairs: int, baseline: str) -> dict[str, Any]:
    """`pairs` runs of each size of this code and of `baseline`'s, interleaved (ABBA)."""
    this: dict[int, list[dict[str, Any]]] = {s: [] for s in sizes}
    base: dict[int, list[dict[str, Any]]] = {s: [] for s in sizes}
    for i in range(pairs):
        for size in sizes:
            for arm in (base, this) if i % 2 == 0 else (this, base):
                arm[size].append(_child(size, baseline if arm is base else None))
    commit = subprocess.run(["git", "-C", baseline, "rev-parse", "HEAD"], capture_output=True, text=True)
    top = max(sizes)
    ratio = {
        k: round(statistics.median(t[k] / b[k] for t, b in zip(this[top], base[top], strict=True)), 3)
        for k in ("peak_rss_mb", "allocs_applied_per_cpu_s", "replica_us_per_alloc", "allocs_applied_per_s")
    }
    return {
        "replica": _arm(this),
        "baseline": {"tree": baseline, "commit": commit.stdout.strip(), "replica": _arm(base)},
        # This code's figure over the baseline's, the median of the pairs' ratios, at the largest size.
        "against_baseline": {"allocs": top, **ratio},
        "pairs": {"this": this, "baseline": base},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/memory.json")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--baseline", help="another checkout (a git worktree) to run in interleaved pairs with")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--breakdown", type=int, help="print what one alloc costs, by member, at this size")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--walk", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(build_and_load(args.child, args.walk)))
        return
    if args.breakdown:
        for tree in [None, args.baseline] if args.baseline else [None]:
            _child(args.breakdown, tree, walk=True)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    report: dict[str, Any] = {"benchmark": "memory", "target": "rss_mb_at_1M_allocs < 800"}
    if args.baseline:
        report.update(_paired(sizes, args.pairs, args.baseline))
    else:
        report["replica"] = [_child(size, None) for size in sizes]
    runs = report["replica"]
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        report["mb_per_100k_allocs"] = round(
            (b["peak_rss_mb"] - a["peak_rss_mb"]) / (b["allocs"] - a["allocs"]) * 1e5, 1
        )
    write(report, args.out)


if __name__ == "__main__":
    main()
