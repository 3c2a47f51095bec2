"""Console fan-out benchmark: what one event costs the API process when 100 console tabs watch
the page it touches - delivering it over their 100 event-stream connections (/ui/events), and
the fragment re-fetches those tabs then make (render.Loads answers them all from one read).

Every service runs as its own process on embedded NATS and PostgreSQL. A job runs; --tabs
clients open a page's event stream as the page's script does (its fragments' topics, from the
page's HTML) and, on each `change`, fetch the fragments it names with `&at=<index>`. Each round
appends one event to the log (a finished evaluation of the job: a `change` for every tab, and
no work for the scheduler), waits until every tab has it, then until every tab has re-fetched.
Reported per page, the mean over --rounds of the API's CPU (user + system, /proc) for each
phase, less what the idle API spends in as long, and the wall times.

    python -m bench.uifanout --out bench/out/uifanout.json [--tabs 100 --rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
import uuid
from dataclasses import dataclass, field
from html import unescape
from typing import Any

import httpx

from bench import report
from bench.pipeline import tree_cpu_seconds
from bench.servers import start
from drover.model import Evaluation
from drover.model.events import EvalsUpserted
from drover.runtime.store import EventStore
from tests.cluster import job_json

FRAGMENT = re.compile(r'<section id="(f-[\w-]+)" class="fragment" data-topics="([^"]*)" hx-get="([^"]*)"')
TARGET_MS = 20.0
# Seconds the idle API is measured for.
IDLE_S = 3.0


@dataclass
class Tab:
    """One browser tab: its fragments (id -> (topics, URL)), the last index it saw, the index
    of the last change it was told of and of the last it re-fetched for."""

    fragments: dict[str, tuple[set[str], str]]
    gate: Gate
    index: int = 0
    changed: int = 0
    fetched: int = 0
    requests: int = 0
    opened: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Gate:
    """Re-fetches wait until every tab has its round's change (the phases measured apart)."""

    released: int = 0
    cond: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def release(self, index: int) -> None:
        async with self.cond:
            self.released = index
            self.cond.notify_all()

    async def passed(self, index: int) -> None:
        async with self.cond:
            await self.cond.wait_for(lambda: self.released >= index)


def fragments_of(html: str) -> dict[str, tuple[set[str], str]]:
    return {m[1]: (set(m[2].split()), unescape(m[3])) for m in FRAGMENT.finditer(html) if m[2]}


async def _tab(http: httpx.AsyncClient, tab: Tab, stop: asyncio.Event) -> None:
    topics = sorted({t for ts, _ in tab.fragments.values() for t in ts})
    params: list[tuple[str, str | int | float | bool | None]] = [("topic", t) for t in topics]
    params.append(("last", tab.index))
    try:
        await _read(http, tab, params, stop)
    except httpx.HTTPError:
        if not stop.is_set():
            raise


async def _read(
    http: httpx.AsyncClient,
    tab: Tab,
    params: list[tuple[str, str | int | float | bool | None]],
    stop: asyncio.Event,
) -> None:
    async with http.stream("GET", "/ui/events", params=params, timeout=None) as r:
        event = ""
        async for line in r.aiter_lines():
            if stop.is_set():
                return
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("id: "):
                tab.index = max(tab.index, int(line[4:]))
            elif line.startswith("data: "):
                if event == "hello":
                    tab.opened.set()
                elif event == "change":
                    hit = set(line[6:].split())
                    urls = [url for ts, url in tab.fragments.values() if ts & hit]
                    at = tab.changed = tab.index
                    tab.requests += len(urls)
                    await tab.gate.passed(at)
                    for url in urls:
                        (await http.get(f"{url}&at={at}")).raise_for_status()
                    tab.fetched = at


async def _wait(cond: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the tabs did not all {what}")
        await asyncio.sleep(0.001)


async def _page(base: str, path: str, tabs: int, rounds: int, store: EventStore, api: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=2 * tabs + 10, max_keepalive_connections=2 * tabs + 10)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        html = (await http.get(path)).text
        index = int(re.search(r'data-index="(\d+)"', html)[1])  # type: ignore[index]
        frags = fragments_of(html)
        gate = Gate()
        all_tabs = [Tab(frags, gate, index) for _ in range(tabs)]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(_tab(http, t, stop)) for t in all_tabs]
        await _wait(lambda: all(t.opened.is_set() for t in all_tabs), "open their stream")
        await asyncio.sleep(2.0)  # settled: every `index` tick of the opening seconds sent
        # The idle API's own CPU (its NATS and Postgres clients' timers), per second.
        c0, t0 = tree_cpu_seconds(api), time.perf_counter()
        await asyncio.sleep(IDLE_S)
        idle = (tree_cpu_seconds(api) - c0) / (time.perf_counter() - t0)
        cpu = [0.0, 0.0]
        wall = [0.0, 0.0]
        for _ in range(rounds):
            ev = Evaluation(id=str(uuid.uuid4()), job_id="web", status="complete", triggered_by="job-register",
                            create_time=time.time_ns(), modify_time=time.time_ns())  # fmt: skip
            c0, t0 = tree_cpu_seconds(api), time.perf_counter()
            at = (await asyncio.to_thread(store.append, [EvalsUpserted(evals=[ev])]))[-1].position
            await _wait(lambda at=at: all(t.changed >= at for t in all_tabs), "get the event")
            c1, t1 = tree_cpu_seconds(api), time.perf_counter()
            await gate.release(at)
            await _wait(lambda at=at: all(t.fetched >= at for t in all_tabs), "re-fetch")
            c2, t2 = tree_cpu_seconds(api), time.perf_counter()
            cpu[0] += c1 - c0
            cpu[1] += c2 - c1
            wall[0] += t1 - t0
            wall[1] += t2 - t1
            await asyncio.sleep(0.2)
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    # Per round: the CPU over all rounds (the clock's 10 ms ticks spread over them), less the idle share.
    deliver, refetch = ((cpu[i] - idle * wall[i]) / rounds * 1000 for i in (0, 1))
    requests = sum(t.requests for t in all_tabs) // rounds  # per round
    return {
        "fragments": {k: sorted(v[0]) for k, v in frags.items()},
        "deliver_api_cpu_ms": round(deliver, 1),
        "refetch_api_cpu_ms": round(refetch, 1),
        "refetch_requests": requests,
        "refetch_api_cpu_ms_per_request": round(refetch / max(requests, 1), 2),
        "deliver_wall_ms": round(wall[0] / rounds * 1000, 1),
        "refetch_wall_ms": round(wall[1] / rounds * 1000, 1),
        "idle_api_cpu_ms_per_s": round(idle * 1000, 1),
        "deliver_under_target": deliver < TARGET_MS,
        "refetch_under_target": refetch < TARGET_MS,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/uifanout.json")
    ap.add_argument("--tabs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    servers = start("drover-uifanout-")
    try:
        cluster = servers.cluster
        base = str(cluster.http.base_url)
        # No client to run it: its eval blocks, and nothing more happens to it while the
        # rounds run (every `change` a tab gets is a round's).
        with httpx.Client(base_url=base, timeout=60) as h:
            h.put("/v1/jobs", json=job_json("web", 2, rolling=False)).raise_for_status()
        settled = lambda: any(e["Status"] == "blocked" for e in cluster.get("/v1/job/web/evaluations"))  # noqa: E731
        cluster.wait(settled, timeout=60)
        api = cluster.procs["api"][0].pid
        result: dict[str, Any] = {"benchmark": "uifanout", "tabs": args.tabs, "rounds": args.rounds,
                                  "target_ms": TARGET_MS, "pages": {}}  # fmt: skip
        for name, path in (("jobs", "/ui/jobs"), ("job", "/ui/jobs/web@default")):
            got = asyncio.run(_page(base, path, args.tabs, args.rounds, servers.store, api))
            result["pages"][name] = got
            print(f"{name:5s} {args.tabs} tabs: deliver {got['deliver_api_cpu_ms']:6.1f} ms API CPU "
                  f"({got['deliver_wall_ms']:.1f} ms wall), re-fetch {got['refetch_api_cpu_ms']:6.1f} ms "
                  f"({got['refetch_wall_ms']:.1f} ms wall); idle {got['idle_api_cpu_ms_per_s']:.1f} ms/s")  # fmt: skip
        report.write(result, args.out)
    finally:
        servers.stop()


if __name__ == "__main__":
    main()
