"""Event stream benchmark: 50 subscribers to every topic (`topic=*`, every namespace) on
`GET /v1/event/stream` while bench/pipeline.py's load runs (100 jobs x 1,000 allocs on 5,000
nodes, its probes too), against the same load without them.

    python -m bench.events --out bench/out/events.json [--subscribers 50 --processes 5]
        [--baseline bench/out/pipeline.json] [every option of bench/pipeline.py]

Both arms run here by default, on fresh servers each, the one without subscribers first
(`pipeline_without`, then `pipeline_with`); --baseline reads the arm without them from a
pipeline JSON instead (`baseline` says which). The subscribers connect once the nodes are
registered, from the log's next position, and are all connected before the load starts.

Reported: every subscriber's events and frames received over the window (from their first
position to the log's last once the load is placed), against the log's own: the frames and
events a replay of the log gives (`drover.api.streamhub.describe`, the API's own), so
`subscribers_short` counts those missing a frame, holding one twice or out of order, or with an
event more or less; the lag from a log position's commit (`events.recorded_at`) to its frame's
arrival at a subscriber, p50/p99/max over every frame of every subscriber; the API's CPU per
subscriber ((API CPU during the load with subscribers - without) / subscribers); and the
pipeline's placements/s with subscribers against without (`throughput_ratio`). --floor adds a
third arm, the same subscribers fed the same bytes by a server that only writes them
(bench/eventfloor.py): what is left of the gap without Drover's code in the path, and the API's
CPU per subscriber over that server's (`api_cpu_per_subscriber_x_floor`, target at most 2).

The driver's cost is kept out of the figures: the subscribers run in processes of their own
(`--processes`, each an asyncio loop with its share of the connections), not in the driver
whose heartbeat and probe threads the pipeline times; they read the HTTP chunks off the
socket themselves (no HTTP client's parser between), parse no JSON (a frame's index is read
from its first bytes and its events counted with bytes.count, in C), and only stamp each
frame's arrival, the lag being worked out after the run; the API's CPU is its own process's,
and the subscribers' own CPU during the load is reported apart (`cpu_s_during_load`'s
subscribers-N). They share this host's cores with the pipeline, as the driver does: their
CPU is the part of `throughput_ratio`'s gap that a subscriber on another machine would not
cost.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import httpx
import uvloop

from bench import pipeline, report
from bench.report import percentile
from bench.servers import Servers
from drover.api.streamhub import describe
from drover.model.changes import TrackedState
from drover.model.events import Event, decode_event
from drover.runtime.store import EventStore

# How long the subscribers may take, once the load is placed, to receive the log's last frame.
CATCH_UP_S = 300.0
EVENT_START = b'{"Topic":"'
SPLIT = len(EVENT_START) - 1
# Each subscriber's socket reads: up to this many bytes at a time, into a buffer of its own.
READ_SIZE = 1 << 20


# --- the subscriber processes ---------------------------------------------------------------


class Follower(asyncio.BufferedProtocol):
    """One subscriber: every frame's index, event count and arrival time, as they come.

    The socket is read into one buffer of its own (asyncio's BufferedProtocol: recv_into, no
    copy of the bytes in Python), the HTTP/1.1 chunk framing is followed in place, and each
    frame is only scanned (its first bytes for its index, bytes.count for its events), so a
    subscriber costs this host little more than the kernel's copy of what it receives."""

    def __init__(self, base: str, index: int, gzip: bool = False) -> None:
        self.base = base
        self.gzip = gzip  # ask for the stream gzipped (as most HTTP clients do), and inflate it
        self.inflate = zlib.decompressobj(31)
        self.next = index  # the index to ask for when (re)connecting
        self.index: list[int] = []
        self.events: list[int] = []
        self.arrival: list[float] = []
        self.closed = 0  # streams the server ended with an error frame (resumed from the next)
        self.connected = asyncio.Event()
        self.buf = bytearray(READ_SIZE)
        self.view = memoryview(self.buf)
        self.lost: asyncio.Future[None] | None = None
        self.transport: asyncio.BaseTransport | None = None
        self._reset()

    def _reset(self) -> None:
        self.filled = 0  # bytes of `buf` not yet parsed (an unfinished head or size line)
        self.inflate = zlib.decompressobj(31)
        self.state = "head"
        self.remaining = 0  # bytes left of the chunk being read
        self._new_line()

    def _new_line(self) -> None:
        self.line_head = b""  # the frame's first bytes, for its index
        self.count = 0  # its events so far
        self.tail = b""  # its last bytes so far, for an event's start split between reads

    # --- asyncio.BufferedProtocol

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view[self.filled :]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def buffer_updated(self, nbytes: int) -> None:
        end, pos = self.filled + nbytes, 0
        buf, now = self.buf, time.time()
        while pos < end:
            if self.state == "end":
                break
            if self.state == "data":
                take = min(self.remaining, end - pos)
                if self.gzip:
                    data = self.inflate.decompress(buf[pos : pos + take])
                    self._payload(data, 0, len(data), now)
                else:
                    self._payload(buf, pos, pos + take, now)
                self.remaining -= take
                pos += take
                if not self.remaining:
                    self.state = "crlf"
            elif self.state == "crlf":
                if end - pos < 2:
                    break
                pos += 2
                self.state = "size"
            else:
                mark = b"\r\n\r\n" if self.state == "head" else b"\r\n"
                i = buf.find(mark, pos, end)
                if i < 0:
                    break
                if self.state == "head":
                    if not buf.startswith(b"HTTP/1.1 200", pos):
                        self._fail(RuntimeError(f"the stream answered {bytes(buf[pos : pos + 40])!r}"))
                        return
                    self.state = "size"
                else:
                    self.remaining = int(bytes(buf[pos:i]).split(b";")[0], 16)
                    self.state = "data" if self.remaining else "end"
                pos = i + len(mark)
        # What is left unparsed is a head or a size line begun: a few bytes, kept at the front.
        self.buf[: end - pos] = self.buf[pos:end]
        self.filled = end - pos
        if self.state == "end" and self.transport is not None:
            # The server ended the stream (its error frame sent): resume from the next index.
            self.transport.close()

    def _payload(self, buf: bytes | bytearray, start: int, end: int, now: float) -> None:
        while start < end:
            nl = buf.find(b"\n", start, end)
            stop = end if nl < 0 else nl
            if len(self.line_head) < 32:
                self.line_head += bytes(buf[start : min(stop, start + 32 - len(self.line_head))])
            self.count += buf.count(EVENT_START, start, stop)
            # An event's start split across two reads: in neither part whole, in tail + head.
            self.count += (self.tail + bytes(buf[start : min(stop, start + SPLIT)])).count(EVENT_START)
            self.tail = (self.tail + bytes(buf[max(start, stop - SPLIT) : stop]))[-SPLIT:]
            if nl < 0:
                return
            self._take(now)
            start = nl + 1

    def _take(self, now: float) -> None:
        head = self.line_head
        if head.startswith(b'{"Index":'):
            index = int(head[9 : head.index(b",", 9)])
            self.index.append(index)
            self.events.append(self.count)
            self.arrival.append(now)
            self.next = index + 1
        elif head.startswith(b'{"Error"'):
            self.closed += 1
        self.connected.set()  # the `{}` at connect has come
        self._new_line()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.lost is not None and not self.lost.done():
            self.lost.set_result(None)

    def _fail(self, error: Exception) -> None:
        if self.lost is not None and not self.lost.done():
            self.lost.set_exception(error)

    async def follow(self, host: str, port: int) -> None:
        """Read the stream for good, resuming after the last frame when it ends."""
        loop = asyncio.get_running_loop()
        while True:
            self._reset()
            self.lost = loop.create_future()
            transport, _ = await loop.create_connection(lambda: self, host, port)
            path = f"/v1/event/stream?topic=*&namespace=*&index={self.next}"
            accept = "Accept-Encoding: gzip\r\n" if self.gzip else ""
            transport.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{accept}\r\n".encode())
            try:
                await self.lost
            finally:
                transport.close()

    def figures(self) -> dict[str, Any]:
        return {"index": self.index, "events": self.events, "arrival": self.arrival, "closed": self.closed}


async def follow_all(base: str, index: int, count: int, gzip: bool) -> None:
    """`count` subscribers from `index`; "ready" on stdout once all are connected; then, given a
    position and a deadline on stdin, their figures (JSON) on stdout once each has that
    position's frame or the deadline passes."""
    followers = [Follower(base, index, gzip) for _ in range(count)]
    url = httpx.URL(base)
    tasks = [asyncio.create_task(f.follow(url.host, url.port or 80)) for f in followers]
    await asyncio.wait_for(asyncio.gather(*(f.connected.wait() for f in followers)), 60)
    print("ready", flush=True)
    target, deadline = (float(x) for x in (await asyncio.to_thread(sys.stdin.readline)).split())
    while time.time() < deadline and not all(f.index and f.index[-1] >= target for f in followers):
        if failed := [t for t in tasks if t.done()]:
            failed[0].result()  # a stream that failed for good: its error
        await asyncio.sleep(0.1)
    for t in tasks:
        t.cancel()
    print(json.dumps([f.figures() for f in followers]), flush=True)


# --- the driver -------------------------------------------------------------------------------


class Subscribers(pipeline.Hooks):
    """The subscriber processes beside the pipeline's load, and what they received."""

    def __init__(
        self, subscribers: int, processes: int, nice: int = 0, gzip: bool = False, keep: bool = False
    ) -> None:
        self.nice = nice
        self.gzip = gzip
        per, extra = divmod(subscribers, processes)
        self.shares = [per + (1 if i < extra else 0) for i in range(processes) if per or i < extra]
        self.procs: list[subprocess.Popen[str]] = []
        self.after = 0
        self.started = 0.0  # when the load started (wall clock)
        self.figures: dict[str, Any] = {}
        # The log's frames in the window: position -> (events, commit time), and with `keep`
        # each frame's line as the API sends it (for bench/eventfloor.py).
        self.log: dict[int, tuple[int, float]] = {}
        self.lines: dict[int, bytes] | None = {} if keep else None

    def loading(self, servers: Servers) -> None:
        self.after = servers.store.last_position()
        self.spawn(str(servers.cluster.http.base_url), self.after + 1)
        self.started = time.time()

    def spawn(self, base: str, index: int) -> None:
        """The subscriber processes, on `base`'s stream from `index`, all connected."""
        for share in self.shares:
            cmd = [sys.executable, "-m", "bench.events", "--follow", str(share), "--base", base]
            cmd += ["--index", str(index), *(["--gzip"] if self.gzip else [])]
            self.procs.append(
                subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None,
                )
            )
        for p in self.procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a subscriber process did not connect (exit {p.poll()})")

    def processes(self) -> list[tuple[str, int]]:
        return [(f"subscribers-{i}", p.pid) for i, p in enumerate(self.procs)]

    def loaded(self, servers: Servers, result: dict[str, Any]) -> None:
        last = servers.store.last_position()
        try:
            self.log = replay(servers.store, self.after, last, self.lines)
            # The last position with a frame: one without (a scaling event) is never sent.
            self.collect(self.log, max(self.log, default=self.after), self.after, last)
        finally:
            self.stop()

    def collect(self, log: dict[int, tuple[int, float]], target: int, after: int, last: int) -> None:
        """Every subscriber's figures once it has `target`'s frame, against `log`'s."""
        received: list[dict[str, Any]] = []
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write(f"{target} {time.time() + CATCH_UP_S}\n")
            p.stdin.flush()
        for p in self.procs:
            out, _ = p.communicate(timeout=CATCH_UP_S + 60)
            received += json.loads(out)
        self.figures = compare(received, log, after, last)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)


def _decode(data: str) -> Event:
    return decode_event(data, replica=True)


def replay(
    store: EventStore, after: int, last: int, lines: dict[int, bytes] | None = None
) -> dict[int, tuple[int, float]]:
    """The log's frames after `after` up to `last`: position -> (its events, its commit time),
    as the API describes them (a replay from the log's start; positions without events left
    out, as the API sends no frame for them); with `lines`, each frame's line put there too."""
    state = TrackedState(drop_metrics=True, owns_events=True)
    frames: dict[int, tuple[int, float]] = {}
    while state.index < last:
        rows = store.read(state.index, 1000, replica=_decode)
        if not rows:
            raise RuntimeError(f"the log ends at {state.index}, before {last}")
        for r in rows:
            if r.position > last:
                break
            f = describe(state, r.position, r.event)
            if r.position > after and f.events:
                assert r.recorded_at is not None
                frames[r.position] = (len(f.events), r.recorded_at.timestamp())
                if lines is not None:
                    lines[r.position] = f.line
    return frames


def compare(
    received: list[dict[str, Any]], log: dict[int, tuple[int, float]], after: int, last: int
) -> dict[str, Any]:
    """Each subscriber's frames against the log's; the lag of every frame received."""
    want = sorted(log)
    per: list[dict[str, Any]] = []
    lags: list[float] = []
    for sub in received:
        got = [
            (i, n, t)
            for i, n, t in zip(sub["index"], sub["events"], sub["arrival"], strict=True)
            if i <= last
        ]
        indexes = [i for i, _, _ in got]
        in_order = all(a < b for a, b in itertools.pairwise(indexes))
        wrong_count = sum(1 for i, n, _ in got if i in log and log[i][0] != n)
        per.append(
            {
                "frames": len(got),
                "events": sum(n for _, n, _ in got),
                "in_order_once": in_order,
                "missing": len(set(want) - set(indexes)),
                "extra": len(set(indexes) - set(want)),
                "wrong_event_count": wrong_count,
                "closed_by_server": sub["closed"],
            }
        )
        lags += [t - log[i][1] for i, _, t in got if i in log]
    short = sum(
        1
        for p in per
        if not p["in_order_once"]
        or p["missing"]
        or p["extra"]
        or p["wrong_event_count"]
        or p["frames"] != len(want)
    )
    ms = sorted(x * 1000 for x in lags)
    return {
        "window": {"after": after, "last": last, "log_positions": last - after, "frames": len(want)},
        "log_events": sum(n for n, _ in log.values()),
        "events_received": sorted({p["events"] for p in per}),
        "subscribers_short": short,
        "every_event_to_every_subscriber_in_order": short == 0 and len(per) > 0,
        "lag_ms": {
            "p50": round(percentile(ms, 0.5), 1) if ms else None,
            "p99": round(percentile(ms, 0.99), 1) if ms else None,
            "max": round(ms[-1], 1) if ms else None,
        },
        "per_subscriber": per,
    }


def summary(
    subs: Subscribers, with_: dict[str, Any], without: dict[str, Any], baseline: str
) -> dict[str, Any]:
    n = sum(subs.shares)
    api_with = with_["cpu_s_during_load"].get("api-0")
    api_without = without["cpu_s_during_load"].get("api-0")
    rate_with, rate_without = with_.get("placements_per_s"), without.get("placements_per_s")
    cpu = with_["cpu_s_during_load"]
    return {
        "benchmark": "events",
        "subscribers": n,
        "processes": len(subs.shares),
        "subscriber_nice": subs.nice,
        "gzip": subs.gzip,
        "nodes": with_["nodes"],
        "jobs": with_["jobs"],
        "count": with_["count"],
        "baseline": baseline,
        **subs.figures,
        "api_cpu_s": {"with": api_with, "without": api_without},
        "api_cpu_s_per_subscriber": (
            round((api_with - api_without) / n, 3)
            if api_with is not None and api_without is not None
            else None
        ),
        "subscribers_cpu_s": round(sum(v for k, v in cpu.items() if k.startswith("subscribers-")), 1),
        "placements_per_s": {"with": rate_with, "without": rate_without},
        "throughput_ratio": round(rate_with / rate_without, 3) if rate_with and rate_without else None,
        "targets": {
            "subscribers_short": "= 0",
            "lag_ms_p99": "< 1000",
            "throughput_ratio": ">= 0.9",
        },
        "pipeline_with": with_,
        "pipeline_without": without,
    }


def main() -> None:
    ap = pipeline.parser(out="bench/out/events.json")
    ap.add_argument("--subscribers", type=int, default=50)
    ap.add_argument("--processes", type=int, default=5, help="processes the subscribers are shared among")
    ap.add_argument("--baseline", help="the pipeline's JSON to read the arm without subscribers from")
    ap.add_argument(
        "--subscriber-nice",
        type=int,
        default=0,
        help="run the subscriber processes at this nice value (19: they take only the CPU the "
        "cluster leaves, standing in for subscribers on other machines)",
    )
    ap.add_argument(
        "--gzip",
        action="store_true",
        help="the subscribers ask for the stream gzipped (Accept-Encoding: gzip, as Nomad's "
        "clients do) and inflate it; without, they read it plain",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="a third arm: the same subscribers fed the same bytes by a server that only writes "
        "them (bench/eventfloor.py), what delivering them costs this host without Drover's code",
    )
    ap.add_argument("--follow", type=int, help=argparse.SUPPRESS)  # a subscriber process: how many
    ap.add_argument("--base", help=argparse.SUPPRESS)
    ap.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor and args.gzip:
        ap.error("--floor sends the frames plain: it can't stand in for a gzipped stream")
    if args.follow:
        # Stopped by the driver: no traceback.
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        # uvloop, as the API runs on: the subscribers cost this host less of its CPU.
        uvloop.run(follow_all(args.base, args.index, args.follow, args.gzip))
        return
    if args.baseline:
        without, baseline = json.loads(Path(args.baseline).read_text()), f"read from {args.baseline}"
    else:
        without, baseline = pipeline.run(args), "run here, before the arm with subscribers"
    processes = max(1, min(args.processes, args.subscribers))
    subs = Subscribers(args.subscribers, processes, args.subscriber_nice, args.gzip, keep=args.floor)
    try:
        with_ = pipeline.run(args, subs)
    finally:
        subs.stop()
    out = summary(subs, with_, without, baseline)
    if args.floor:
        from bench import eventfloor  # it builds on this module

        out["floor"] = eventfloor.run(args, subs, with_, without)
        against_floor(out)
    report.write(out, args.out)


def against_floor(out: dict[str, Any]) -> None:
    """The API's CPU per subscriber over the floor's server's (all of whose CPU is its
    subscribers'): what Drover's code costs a subscriber beyond writing its bytes."""
    server, per_subscriber = out["floor"].get("server_cpu_s"), out["api_cpu_s_per_subscriber"]
    if server and per_subscriber is not None:
        floor = server / out["subscribers"]
        out["floor"]["server_cpu_s_per_subscriber"] = round(floor, 4)
        out["api_cpu_per_subscriber_x_floor"] = round(per_subscriber / floor, 2)
        out["targets"]["api_cpu_per_subscriber_x_floor"] = "<= 2"


if __name__ == "__main__":
    main()
