"""The pipeline's load on the HA topology beside the single servers, in interleaved pairs.

Each pair runs `bench/pipeline.py`'s load (its options, default 100 jobs x 1,000 allocs on
5,000 nodes) on fresh single servers (one NATS, one PostgreSQL), then on the HA topology of
docs/deployment.md (three NATS servers in one JetStream cluster, a PostgreSQL primary with its
synchronous standby under pg_auto_failover), so both arms see the same hour of this host.
Reported: each run's placements/s, probe p50 and the host's speed; each arm's median; the HA
arm's median over the single arm's.

    python -m bench.pipelineha --out bench/out/pipeline_ha.json [--pairs 2] [pipeline options]
"""

from __future__ import annotations

import statistics
from typing import Any

from bench import pipeline, report


def main() -> None:
    ap = pipeline.parser(out="bench/out/pipeline_ha.json")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"single": [], "ha": []}
    for _ in range(args.pairs):
        for arm in ("single", "ha"):
            args.ha = arm == "ha"
            r = pipeline.run(args)
            runs[arm].append(
                {
                    "placements_per_s": r["placements_per_s"],
                    "probe_p50_ms": r["probe_register_to_placed_ms"]["p50"],
                    "nodes_missed": r["nodes_missed"],
                    "host_reference_eval_ms": r["host_reference_eval_ms"],
                }
            )
            print(f"pipelineha: {arm}: {runs[arm][-1]}", flush=True)
    median = {arm: statistics.median(x["placements_per_s"] for x in rs) for arm, rs in runs.items()}
    report.write(
        {
            "benchmark": "pipeline_ha",
            "nodes": args.nodes,
            "jobs": args.jobs,
            "count": args.count,
            "pairs": args.pairs,
            "runs": runs,
            "single_placements_per_s": median["single"],
            "ha_placements_per_s": median["ha"],
            "ha_over_single": round(median["ha"] / median["single"], 3),
            "nodes_missed": sum(x["nodes_missed"] for rs in runs.values() for x in rs),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
