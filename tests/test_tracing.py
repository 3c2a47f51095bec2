"""One trace follows a job register through api, broker, worker and planner, each its own
process, with the context carried in the log's metadata and NATS headers."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from .cluster import Cluster, job_json, node_json


def spans(log_dir: Path) -> list[dict[str, object]]:
    out = []
    for f in log_dir.glob("*.log"):
        for line in f.read_text().splitlines():
            if line.startswith('{"name"'):
                out.append(json.loads(line))
    return out


def test_one_trace_spans_every_service(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: object
) -> None:
    c = Cluster(database_url, nats_url, tmp_path, workers=1, env={"OTEL_TRACES_EXPORTER": "console"}).start()
    try:
        c.put("/v1/drover/node/register", {"Node": node_json("n1")})
        resp = c.put("/v1/jobs", job_json("traced", 2))
        c.wait(lambda: c.get(f"/v1/evaluation/{resp['EvalID']}")["Status"] == "complete")

        def register_trace() -> set[str] | None:
            by_trace: dict[str, set[str]] = defaultdict(set)
            register_traces = set()
            for s in spans(tmp_path):
                trace_id = s["context"]["trace_id"]  # type: ignore[index]
                by_trace[trace_id].add(f"{s['resource']['attributes']['service.name']}:{s['name']}")  # type: ignore[index]
                if s["name"] == "job.register" and s["attributes"].get("eval.id") == resp["EvalID"]:  # type: ignore[union-attr]
                    register_traces.add(trace_id)
            for t in register_traces:
                if len({name.split(":")[0] for name in by_trace[t]}) == 4:
                    return by_trace[t]
            return None

        names = c.wait(register_trace, timeout=30, interval=0.2)  # spans are exported in batches
        assert {"drover-api:job.register", "drover-broker:broker.dispatch", "drover-worker:worker.schedule",
                "drover-planner:planner.apply"} <= names  # fmt: skip
    finally:
        c.stop()
