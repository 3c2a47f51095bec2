"""API request benchmark: what one simple request costs the API process.

Every client agent's heartbeat and blocking query, and every CLI call, is such a request. With
every service running (and idle), 4 threads each send --requests GETs of one kind; reported per
kind: requests/s, and the API process's CPU (user and system) per request.
Kinds: a node's document (`/v1/node/:id`) and an unknown job (`/v1/job/:id`, a 404). With
--acl, the API checks every request against its token (ACLs on): the same kinds with a client
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
from tests.cluster import node_json

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
        api = cluster.procs["api"][0].pid
        base = str(cluster.http.base_url)
        kinds: dict[str, Callable[[httpx.Client], httpx.Response]] = {
            "node": lambda h: h.get("/v1/node/n0"),
            "unknown_job": lambda h: h.get("/v1/job/nope"),
        }
        if args.acl:
            kinds = _with_tokens(cluster.http, kinds)
        else:
            cluster.put("/v1/drover/node/register", {"Node": node_json("n0")})
        result: dict[str, Any] = {
            "benchmark": "requests_acl" if args.acl else "requests",
            "threads": THREADS,
            "requests": args.requests,
        }
        for name, send in kinds.items():

            def work(_: int, send: Callable[[httpx.Client], httpx.Response] = send) -> None:
                with httpx.Client(base_url=base, timeout=30) as h:
                    for _ in range(args.requests):
                        send(h)

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


def _with_tokens(
    http: httpx.Client, kinds: dict[str, Callable[[httpx.Client], httpx.Response]]
) -> dict[str, Callable[[httpx.Client], httpx.Response]]:
    """The kinds sent with a client token granting them, and with the management token."""
    root = {"X-Nomad-Token": http.post("/v1/acl/bootstrap").json()["SecretID"]}
    rules = 'namespace "default" { policy = "read" }\nnode { policy = "write" }'
    http.put("/v1/acl/policy/reads", json={"Name": "reads", "Rules": rules}, headers=root).raise_for_status()
    r = http.post("/v1/acl/token", json={"Type": "client", "Policies": ["reads"]}, headers=root)
    client = {"X-Nomad-Token": r.json()["SecretID"]}
    http.put("/v1/drover/node/register", json={"Node": node_json("n0")}, headers=root).raise_for_status()
    out: dict[str, Callable[[httpx.Client], httpx.Response]] = {}
    for name, send in kinds.items():
        for who, headers in (("client", client), ("management", root)):

            def with_token(
                h: httpx.Client, send: Any = send, headers: dict[str, str] = headers
            ) -> httpx.Response:
                h.headers.update(headers)
                r: httpx.Response = send(h)
                assert r.status_code in (200, 404), r.text
                return r

            out[f"{name}_{who}"] = with_token
    return out


if __name__ == "__main__":
    main()
