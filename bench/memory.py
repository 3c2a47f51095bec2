"""Replica memory benchmark: what a service's in-memory replica costs per alloc.

Builds the events a cluster of 5,000 nodes and N allocs (jobs of 1,000) leaves in the log,
stores each the way the event store does (compact JSON), then decodes and applies them exactly
as a replica does (drover.runtime.replica), in a fresh child process per size whose peak RSS is
read from /proc. Reported: peak RSS per size, MB per 100k allocs, and the RSS at 1,000,000.

    python -m bench.memory --out bench/out/memory.json [--sizes 100000,1000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.report import write

NODES = 5000
PER_JOB = 1000


def build_and_load(allocs: int) -> dict[str, Any]:
    """In this process: build `allocs` allocs' worth of events, store-encode, replica-decode,
    apply; report peak RSS."""
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
    return {
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/memory.json")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(build_and_load(args.child)))
        return
    runs = []
    for size in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, "-m", "bench.memory", "--child", str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout))
        print(json.dumps(runs[-1]), flush=True)
    report: dict[str, Any] = {"benchmark": "memory", "replica": runs, "target": "rss_mb_at_1M_allocs < 1500"}
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        report["mb_per_100k_allocs"] = round(
            (b["peak_rss_mb"] - a["peak_rss_mb"]) / (b["allocs"] - a["allocs"]) * 1e5, 1
        )
    write(report, args.out)


if __name__ == "__main__":
    main()
