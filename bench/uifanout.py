"""Console fan-out benchmark: what one event costs the API process when 100 console tabs watch
the page it touches - the fragments it touches answered once (one read, one render, one
in-process request through the app per fragment) and pushed down the tabs' 100 event-stream
connections (/ui/events), each with its tab's CSRF token put in.

Every service runs as its own process on embedded NATS and PostgreSQL. A job runs; --tabs
clients open a page's event stream as the page's script does (its live fragments named,
`frag=<id> <url> <topic>...`, from the page's HTML) and read the fragments pushed to them. Each
round appends one event to the log (a finished evaluation of the job: it touches fragments of
every tab, and is no work for the scheduler), and waits until every tab has its fragments and
the id that follows them (sent once nothing waits to be pushed). Rounds are spaced by more than
a second (a fragment is pushed at most once a second). Reported per page, the mean over
--rounds of the API's CPU (user + system, /proc) from the append until every tab has it all,
less what the idle API spends in as long, and the wall time.

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
# Seconds between rounds: more than the second a fragment waits between two pushes.
GAP = 1.1


@dataclass
class Tab:
    """One browser tab: its fragments (id -> (topics, URL)), the last id it was sent, and the
    fragments pushed to it (id -> how many)."""

    fragments: dict[str, tuple[set[str], str]]
    index: int = 0
    pushed: dict[str, int] = field(default_factory=dict)
    refetches: int = 0
    received: int = 0
    opened: asyncio.Event = field(default_factory=asyncio.Event)


def fragments_of(html: str) -> dict[str, tuple[set[str], str]]:
    return {m[1]: (set(m[2].split()), unescape(m[3])) for m in FRAGMENT.finditer(html) if m[2]}


async def _tab(http: httpx.AsyncClient, tab: Tab, stop: asyncio.Event) -> None:
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("frag", f"{id_} {url} {' '.join(sorted(topics))}") for id_, (topics, url) in tab.fragments.items()
    ]
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
        r.raise_for_status()
        event, data = "", []
        async for line in r.aiter_lines():
            if stop.is_set():
                return
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("id: "):
                tab.index = max(tab.index, int(line[4:]))
            elif line.startswith("data: "):
                data.append(line[6:])
                tab.received += len(line) + 1
            elif not line and event:
                if event == "hello":
                    tab.opened.set()
                elif event == "fragment":
                    assert data[1].startswith(f'<section id="{data[0]}"'), data[:2]
                    tab.pushed[data[0]] = tab.pushed.get(data[0], 0) + 1
                elif event in ("refetch", "resync"):
                    tab.refetches += 1
                event, data = "", []


async def _wait(cond: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the tabs did not all {what}")
        await asyncio.sleep(0.001)


async def _page(base: str, path: str, tabs: int, rounds: int, store: EventStore, api: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=tabs + 10, max_keepalive_connections=tabs + 10)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        html = (await http.get(path)).text  # (and the session's CSRF cookie, which every tab shares)
        index = int(re.search(r'data-index="(\d+)"', html)[1])  # type: ignore[index]
        frags = fragments_of(html)
        all_tabs = [Tab(frags, index) for _ in range(tabs)]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(_tab(http, t, stop)) for t in all_tabs]
        await _wait(lambda: all(t.opened.is_set() for t in all_tabs), "open their stream")
        await asyncio.sleep(2.0)  # settled: every `index` tick of the opening seconds sent
        # The idle API's own CPU (its NATS and Postgres clients' timers), per second.
        c0, t0 = tree_cpu_seconds(api), time.perf_counter()
        await asyncio.sleep(IDLE_S)
        idle = (tree_cpu_seconds(api) - c0) / (time.perf_counter() - t0)
        cpu = wall = 0.0
        before = sum(sum(t.pushed.values()) for t in all_tabs)
        received = sum(t.received for t in all_tabs)
        for _ in range(rounds):
            ev = Evaluation(id=str(uuid.uuid4()), job_id="web", status="complete", triggered_by="job-register",
                            create_time=time.time_ns(), modify_time=time.time_ns())  # fmt: skip
            c0, t0 = tree_cpu_seconds(api), time.perf_counter()
            at = (await asyncio.to_thread(store.append, [EvalsUpserted(evals=[ev])]))[-1].position
            await _wait(lambda at=at: all(t.index >= at for t in all_tabs), "get the event's fragments")
            c1, t1 = tree_cpu_seconds(api), time.perf_counter()
            cpu += c1 - c0
            wall += t1 - t0
            await asyncio.sleep(GAP)  # past the second a fragment waits between pushes
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    # Per round: the CPU over all rounds (the clock's 10 ms ticks spread over them), less the idle share.
    push = (cpu - idle * wall) / rounds * 1000
    pushed = (sum(sum(t.pushed.values()) for t in all_tabs) - before) / rounds / tabs
    if pushed < 1 or any(t.refetches for t in all_tabs):
        raise RuntimeError(f"the tabs were not pushed their fragments ({pushed} a round, refetches)")
    received = (sum(t.received for t in all_tabs) - received) // rounds // tabs
    return {
        "fragments": {k: sorted(v[0]) for k, v in frags.items()},
        "fragments_pushed_per_tab_per_round": round(pushed, 2),
        "bytes_per_tab_per_round": received,
        "push_api_cpu_ms": round(push, 1),
        "push_wall_ms": round(wall / rounds * 1000, 1),
        "idle_api_cpu_ms_per_s": round(idle * 1000, 1),
        "under_target": push < TARGET_MS,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/uifanout.json")
    ap.add_argument("--tabs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--pages", default="jobs,job", help="of: jobs (the list), job (a job's page)")
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
        pages = {"jobs": "/ui/jobs", "job": "/ui/jobs/web@default"}
        for name in args.pages.split(","):
            path = pages[name]
            got = asyncio.run(_page(base, path, args.tabs, args.rounds, servers.store, api))
            result["pages"][name] = got
            print(f"{name:5s} {args.tabs} tabs: {got['fragments_pushed_per_tab_per_round']} fragments pushed "
                  f"to each: {got['push_api_cpu_ms']:6.1f} ms API CPU ({got['push_wall_ms']:.1f} ms wall); "
                  f"idle {got['idle_api_cpu_ms_per_s']:.1f} ms/s")  # fmt: skip
        report.write(result, args.out)
    finally:
        servers.stop()


if __name__ == "__main__":
    main()
