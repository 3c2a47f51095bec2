"""API request benchmark: what one simple request costs the API process.

Every client agent's heartbeat and blocking query, and every CLI call, is such a request. With
every service running (and idle), 4 threads each send --requests requests of one kind; reported
per kind: requests/s, and the API process's CPU (user and system) per request.
Kinds: a node's document (`/v1/node/:id`), an unknown job (`/v1/job/:id`, a 404), and a node's
heartbeat (`PUT /v1/drover/node/:id/heartbeat`, with the node's secret: the hottest request).
With --acl, the API checks every request against its token (ACLs on): the reads with a client
token whose policy grants them, and with the bootstrap's management token.

    python -m bench.requests --out bench/out/requests.json [--requests 1000] [--acl]
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
    ap.add_argument("--acl", action="store_true", help="ACLs on: every request with a token")
    args = ap.parse_args()
    servers = start("drover-requests-", workers=1, env={"DROVER_ACL_ENABLED": "true"} if args.acl else {})
    try:
        cluster = servers.cluster
        root = _bootstrap(cluster.http) if args.acl else {}
        cluster.http.put(
            "/v1/drover/node/register", json={"Node": node_json("n0")}, headers=root
        ).raise_for_status()
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
        if args.acl:
            kinds = _with_tokens(cluster.http, root, kinds)
        result: dict[str, Any] = {
            "benchmark": "requests_acl" if args.acl else "requests",
            "threads": THREADS,
            "requests": args.requests,
        }
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


Kind = tuple[Callable[[httpx.Client], httpx.Response], int]


def _bootstrap(http: httpx.Client) -> dict[str, str]:
    return {"X-Nomad-Token": http.post("/v1/acl/bootstrap").json()["SecretID"]}


def _with_tokens(http: httpx.Client, root: dict[str, str], kinds: dict[str, Kind]) -> dict[str, Kind]:
    """The reads sent with a client token granting them, and with the management token; the
    heartbeat with its node's secret, as ever."""
    rules = 'namespace "default" { policy = "read" }\nnode { policy = "read" }'
    http.put("/v1/acl/policy/reads", json={"Name": "reads", "Rules": rules}, headers=root).raise_for_status()
    r = http.post("/v1/acl/token", json={"Type": "client", "Policies": ["reads"]}, headers=root)
    client = {"X-Nomad-Token": r.json()["SecretID"]}
    out: dict[str, Kind] = {}
    for name, (send, status) in kinds.items():
        if name == "heartbeat":
            out[name] = (send, status)
            continue
        for who, headers in (("client", client), ("management", root)):

            def with_token(
                h: httpx.Client, send: Any = send, headers: dict[str, str] = headers
            ) -> httpx.Response:
                h.headers.update(headers)
                r: httpx.Response = send(h)
                return r

            out[f"{name}_{who}"] = (with_token, status)
    return out


if __name__ == "__main__":
    main()
