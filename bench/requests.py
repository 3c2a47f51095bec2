"""API request benchmark: what one simple request costs the API process.

Every client agent's heartbeat and blocking query, and every CLI call, is such a request. With
every service running (and idle), 4 threads each send --requests requests of one kind; reported
per kind: requests/s, and the API process's CPU (user and system) per request.
Kinds: a node's document (`/v1/node/:id`), an unknown job (`/v1/job/:id`, a 404), and a node's
heartbeat (`PUT /v1/drover/node/:id/heartbeat`, with the node's secret: the hottest request).

    python -m bench.requests --out bench/out/requests.json [--requests 1000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench import report
from bench.pipeline import cpu_seconds
from bench.servers import start
from tests.cluster import NODE_SECRET, node_json

THREADS = 4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/requests.json")
    ap.add_argument("--requests", type=int, default=1000, help="per thread and kind")
    args = ap.parse_args()
    servers = start("drover-requests-", workers=1)
    try:
        cluster = servers.cluster
        cluster.put("/v1/drover/node/register", {"Node": node_json("n0")})
        api = cluster.procs["api"][0].pid
        base = str(cluster.http.base_url)
        # Each kind, and the status every one of its requests must get.
        kinds: dict[str, tuple[Callable[[httpx.Client], httpx.Response], int]] = {
            "node": (lambda h: h.get("/v1/node/n0"), 200),
            "unknown_job": (lambda h: h.get("/v1/job/nope"), 404),
            "heartbeat": (
                lambda h: h.put("/v1/drover/node/n0/heartbeat", headers={"X-Nomad-Token": NODE_SECRET}),
                200,
            ),
        }
        result: dict[str, Any] = {"benchmark": "requests", "threads": THREADS, "requests": args.requests}
        for name, (send, status) in kinds.items():

            def work(
                _: int, send: Callable[[httpx.Client], httpx.Response] = send, status: int = status
            ) -> None:
                with httpx.Client(base_url=base, timeout=30) as h:
                    for _ in range(args.requests):
                        r = send(h)
                        assert r.status_code == status, (r.status_code, r.text)

            work(0)  # warm
            before = cpu_seconds(api)
            t0 = time.monotonic()
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(work, range(THREADS)))
            took = time.monotonic() - t0
            after = cpu_seconds(api)
            n = THREADS * args.requests
            result[name] = {
                "requests_per_s": round(n / took),
                "api_cpu_ms_per_request": round((after - before) * 1000 / n, 3),
            }
    finally:
        servers.stop()
    report.write(result, args.out)


if __name__ == "__main__":
    main()
