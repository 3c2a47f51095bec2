"""API request benchmark: what one simple request costs the API process, against the floor of
an HTTP server answering the same bytes.

Every client agent's heartbeat and blocking query, and every CLI call, is such a request. With
every service running (and idle), 4 threads each send --requests requests of one kind; reported
per kind: requests/s, and the API process's CPU (user and system, from /proc) per request.
Kinds: a node's document (`/v1/node/:id`), a job's (`/v1/job/:id`, a count-1 job), a list of
1,000 allocs (`/v1/allocations`), an unknown job (`/v1/job/:id`, a 404), a blocking query on a
node woken by a change to it (`/v1/node/:id?index=`, the change appended to the log by this
driver, rounds of one query per thread), and a node's heartbeat (`PUT
/v1/drover/node/:id/heartbeat`, with the node's secret: the hottest request).

The floors (bench/requestfloor.py): the same requests, each answered with the bytes the API
answered it with (status, Nomad's headers, body) by uvicorn on the API's settings in a process
of its own, a bare ASGI app (`asgi`) and a one-route FastAPI app (`fastapi`); their server's
CPU per request measured the same way, each kind's three arms run one after the other. Reported
per kind: `x_asgi`, `x_fastapi`: the API's CPU per request over each floor's. A floor answers
a blocking query at once: what the API spends on the wait and the NOTIFY is in its figure.

With --acl, the API checks every request against its token (ACLs on): the reads with a client
token whose policy grants them, and with the bootstrap's management token.

    python -m bench.requests --out bench/out/requests.json [--requests 1000] [--acl]
        [--kinds node,job,...]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from bench import report
from bench.pipeline import cpu_seconds
from bench.requestfloor import ARMS, Floor
from bench.servers import Servers, start
from drover.model.events import NodeEligibilityUpdated
from tests.cluster import NODE_SECRET, job_json, node_json

THREADS = 4
ALLOCS = 1000
# Nomad's headers a floor answers with too (uvicorn adds its date and server, the app the length).
KEPT_HEADERS = ("content-type", "x-nomad-index", "x-nomad-knownleader", "x-nomad-lastcontact")
# How long a round of blocking queries is given to reach the API before the change is appended.
SETTLE_S = 0.01


@dataclass(frozen=True)
class Kind:
    method: str
    path: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    blocking: bool = False  # ?index= of the last answer, woken by a change to node n0
    share: float = 1.0  # of --requests (the list is slow: fewer of it)


def kinds() -> dict[str, Kind]:
    return {
        "node": Kind("GET", "/v1/node/n0", 200),
        "job": Kind("GET", "/v1/job/one", 200),
        "allocs_1000": Kind("GET", "/v1/allocations", 200, share=0.05),
        "unknown_job": Kind("GET", "/v1/job/nope", 404),
        "blocking_node": Kind("GET", "/v1/node/n0", 200, blocking=True),
        "heartbeat": Kind("PUT", "/v1/drover/node/n0/heartbeat", 200, {"X-Nomad-Token": NODE_SECRET}),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/requests.json")
    ap.add_argument("--requests", type=int, default=1000, help="per thread and kind")
    ap.add_argument("--acl", action="store_true", help="ACLs on: every request with a token")
    ap.add_argument("--kinds", default="", help="a comma-separated subset of the kinds")
    ap.add_argument("--no-floors", action="store_true", help="the API's figures only")
    args = ap.parse_args()
    # Nodes that stay up without heartbeats for the run (the heartbeat kind sends them anyway).
    env = {"DROVER_HEARTBEAT_MIN_TTL": "3600", **({"DROVER_ACL_ENABLED": "true"} if args.acl else {})}
    servers = start("drover-requests-", workers=1, env=env)
    floors: dict[str, Floor] = {}
    try:
        http = servers.cluster.http
        root = _bootstrap(http) if args.acl else {}
        _seed(servers, root)
        todo = kinds()
        if args.kinds:
            todo = {k: v for k, v in todo.items() if k in args.kinds.split(",")}
        if args.acl:
            todo = _with_tokens(http, root, todo)
        api = servers.cluster.procs["api"][0].pid
        base = str(http.base_url)
        answers = servers.tmp / "answers.json"
        answers.write_text(json.dumps({name: _answer(http, kind) for name, kind in todo.items()}))
        if not args.no_floors:
            floors = {arm: Floor(arm, answers) for arm in ARMS}
        result: dict[str, Any] = {
            "benchmark": "requests_acl" if args.acl else "requests",
            "threads": THREADS,
            "requests": args.requests,
            "idle_api_cpu_ms_per_s": _idle(api),
        }
        for name, kind in todo.items():
            n = max(1, round(args.requests * kind.share))
            got = {"api": _run(servers, base, kind, n, api)}
            for arm, floor in floors.items():
                floor_kind = replace(kind, path=f"/floor/{name}", blocking=False)
                got[arm] = _run(servers, floor.base, floor_kind, n, floor.proc.pid)
            result[name] = _figures(got)
            print(name, json.dumps(result[name]), flush=True)
    finally:
        for floor in floors.values():
            floor.stop()
        servers.stop()
    report.write(result, args.out)


def _figures(got: dict[str, dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = dict(got["api"])
    for arm in ARMS:
        if arm in got:
            out[arm] = got[arm]
            out[f"x_{arm}"] = round(
                got["api"]["api_cpu_ms_per_request"] / got[arm]["api_cpu_ms_per_request"], 2
            )
    return out


def _seed(servers: Servers, root: dict[str, str]) -> None:
    """A node `big` running a job of 1,000 allocs, then node n0 and a count-1 job `one`."""
    cluster, http = servers.cluster, servers.cluster.http
    big = node_json("big", cpu=10**6, mem=10**6)
    big["NodeResources"]["Disk"]["DiskMB"] = 10**6
    http.put("/v1/drover/node/register", json={"Node": big}, headers=root).raise_for_status()
    http.put(
        "/v1/jobs", json=job_json("many", ALLOCS, cpu=10, mem=10, rolling=False), headers=root
    ).raise_for_status()
    cluster.wait(lambda: len(http.get("/v1/allocations", headers=root).json()) == ALLOCS, timeout=120)
    http.put("/v1/drover/node/register", json={"Node": node_json("n0")}, headers=root).raise_for_status()
    http.put("/v1/jobs", json=job_json("one", 1, rolling=False), headers=root).raise_for_status()
    cluster.wait(lambda: len(http.get("/v1/allocations", headers=root).json()) == ALLOCS + 1, timeout=60)


def _answer(http: httpx.Client, kind: Kind) -> tuple[int, list[tuple[str, str]], str]:
    r = http.request(kind.method, kind.path, headers=kind.headers)
    assert r.status_code == kind.status, (kind, r.status_code, r.text)
    return r.status_code, [(k, v) for k, v in r.headers.items() if k in KEPT_HEADERS], r.text


def _idle(pid: int, seconds: float = 2.0) -> float:
    """The idle API's own CPU (its NATS and Postgres clients' timers), ms per second."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return round((cpu_seconds(pid) - c0) * 1000 / (time.monotonic() - t0), 2)


def _run(servers: Servers, base: str, kind: Kind, requests: int, pid: int) -> dict[str, float]:
    """THREADS threads of `requests` each (warmed by one thread's first): requests/s and the
    server process's CPU per request."""
    if kind.blocking:
        return _run_blocking(servers, base, kind, requests, pid)

    def work(_: int) -> None:
        with httpx.Client(base_url=base, timeout=30, headers=kind.headers) as h:
            for _ in range(requests):
                r = h.request(kind.method, kind.path)
                assert r.status_code == kind.status, (r.status_code, r.text)

    work(0)  # warm
    before, t0 = cpu_seconds(pid), time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(work, range(THREADS)))
    return _per_request(pid, before, time.monotonic() - t0, THREADS * requests)


def _per_request(pid: int, before: float, took: float, n: int) -> dict[str, float]:
    return {
        "requests_per_s": round(n / took),
        "api_cpu_ms_per_request": round((cpu_seconds(pid) - before) * 1000 / n, 3),
    }


def _run_blocking(servers: Servers, base: str, kind: Kind, requests: int, pid: int) -> dict[str, float]:
    """Rounds of one blocking query per thread on node n0, each round woken by one change to
    the node appended by this driver (after SETTLE_S, for the queries to reach the API)."""
    rounds = max(1, requests // 4)
    barrier = threading.Barrier(THREADS + 1, timeout=60)

    def work(_: int) -> int:
        woken = 0
        with httpx.Client(base_url=base, timeout=60, headers=kind.headers) as h:
            index = int(h.request(kind.method, kind.path).headers["X-Nomad-Index"])
            barrier.wait()
            for _ in range(rounds):
                r = h.request(kind.method, kind.path, params={"index": index, "wait": "30s"})
                assert r.status_code == kind.status, (r.status_code, r.text)
                woken += int(r.headers["X-Nomad-Index"]) > index
                index = int(r.headers["X-Nomad-Index"])
                barrier.wait()
        return woken

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(work, i) for i in range(THREADS)]
        barrier.wait()
        before, t0 = cpu_seconds(pid), time.monotonic()
        for i in range(rounds):
            time.sleep(SETTLE_S)
            eligibility = "ineligible" if i % 2 == 0 else "eligible"
            servers.store.append([NodeEligibilityUpdated(node_id="n0", eligibility=eligibility)])
            barrier.wait()
        took = time.monotonic() - t0
        woken = sum(f.result() for f in futures)
    out = _per_request(pid, before, took, THREADS * rounds)
    out["woken_by_a_change"] = round(woken / (THREADS * rounds), 3)
    return out


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
    for name, kind in kinds.items():
        if name == "heartbeat":
            out[name] = kind
            continue
        for who, headers in (("client", client), ("management", root)):
            out[f"{name}_{who}"] = replace(kind, headers=headers)
    return out


if __name__ == "__main__":
    main()
