"""The floor under bench/events.py's throughput ratio: what delivering the stream's bytes to its
subscribers costs this host with no Drover code in the path.

A third arm (`python -m bench.events --floor`): the pipeline's load again, on fresh servers,
beside the same subscriber processes (bench.events' Follower, unchanged), but fed by a server
that does nothing except write bytes already built: every frame line the arm with subscribers
was sent (built offline from its log by the API's own code, `drover.api.streamhub.describe`),
each at its commit's offset from that arm's load start, scaled to the arm without subscribers'
length (so every byte is delivered within this arm's load, even if it runs as fast as that arm).
The frames due together go to each connection in one chunk, one write: no JSON, no matching, no
queue per subscriber. What this arm's throughput loses against the arm without subscribers is
what the kernel's copies and the subscribers' own reading cost on these cores, a cost no server
can avoid while its subscribers share the host with the cluster.

    python -m bench.eventfloor --serve FRAMES   (the server: its port, then "go" on stdin)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import uvloop

from bench import pipeline
from bench.events import Subscribers
from bench.servers import Servers

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Connection(asyncio.Protocol):
    """A subscriber's connection: once its request's head is in, the stream's head and `{}`,
    then whatever the server sends to all."""

    def __init__(self, live: set[asyncio.WriteTransport]) -> None:
        self.live = live
        self.request = b""
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)  # uvloop's: not a subclass

    def data_received(self, data: bytes) -> None:
        if self.transport in self.live or self.transport is None:
            return
        self.request += data
        if b"\r\n\r\n" in self.request:
            self.transport.write(HEAD + chunk(b"{}\n"))
            self.live.add(self.transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.live.discard(self.transport)


async def deliver(frames: list[tuple[float, bytes]], live: set[asyncio.WriteTransport]) -> int:
    """Each frame line to every live connection at its offset (seconds) from now; the lines
    due together in one chunk, one write. Answers the writes per connection."""
    start, i, writes = time.time(), 0, 0
    while i < len(frames):
        now = time.time() - start
        j = i
        while j < len(frames) and frames[j][0] <= now:
            j += 1
        if j == i:
            await asyncio.sleep(frames[i][0] - now)
            continue
        data = chunk(b"".join(line for _, line in frames[i:j]))
        for t in live:
            t.write(data)
        i, writes = j, writes + 1
    return writes


async def serve(path: Path) -> None:
    """Print the port; on "go" from stdin, `deliver` the frames pickled at `path`."""
    frames: list[tuple[float, bytes]] = pickle.loads(path.read_bytes())
    live: set[asyncio.WriteTransport] = set()
    server = await asyncio.get_running_loop().create_server(lambda: Connection(live), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    print(await deliver(frames, live), flush=True)
    await asyncio.Event().wait()


class Floor(Subscribers):
    """The subscriber processes, fed by the floor's server instead of the API."""

    def __init__(
        self, frames: list[tuple[float, bytes]], log: dict[int, tuple[int, float]], subs: Subscribers
    ) -> None:
        super().__init__(sum(subs.shares), len(subs.shares), subs.nice)
        self.frames, self.log = frames, log
        self.server: subprocess.Popen[str] | None = None
        self.writes = 0  # the server's writes to each subscriber

    def loading(self, servers: Servers) -> None:
        path = servers.tmp / "floor.pickle"
        path.write_bytes(pickle.dumps(self.frames))
        cmd = [sys.executable, "-m", "bench.eventfloor", "--serve", str(path)]
        self.server = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.server.stdout is not None and self.server.stdin is not None
        port = int(self.server.stdout.readline())
        self.spawn(f"http://127.0.0.1:{port}", min(self.log, default=0))
        self.server.stdin.write("go\n")
        self.server.stdin.flush()

    def processes(self) -> list[tuple[str, int]]:
        assert self.server is not None
        return [("floor-server", self.server.pid), *super().processes()]

    def loaded(self, servers: Servers, result: dict[str, Any]) -> None:
        try:
            last = max(self.log, default=0)
            self.collect(self.log, last, min(self.log, default=1) - 1, last)
            assert self.server is not None and self.server.stdout is not None
            self.writes = int(self.server.stdout.readline())  # printed once every frame is written
        finally:
            self.stop()
        # The floor's server stamps no commit times: a lag against the other arm's means nothing.
        self.figures.pop("lag_ms", None)

    def stop(self) -> None:
        super().stop()
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            self.server.wait(timeout=10)


def schedule(subs: Subscribers, scale: float) -> list[tuple[float, bytes]]:
    """The with-arm's frame lines, each at its commit's offset from that arm's load start,
    times `scale`."""
    assert subs.lines is not None, "the with-arm keeps its lines for the floor"
    return [(max(0.0, (subs.log[i][1] - subs.started) * scale), subs.lines[i]) for i in sorted(subs.lines)]


def summary(floor: Floor, result: dict[str, Any], without: dict[str, Any], scale: float) -> dict[str, Any]:
    cpu = result["cpu_s_during_load"]
    rate, rate_without = result.get("placements_per_s"), without.get("placements_per_s")
    return {
        **{k: v for k, v in floor.figures.items() if k != "per_subscriber"},
        "frames_sent": len(floor.frames),
        "writes_per_subscriber": floor.writes,
        "bytes_per_subscriber": sum(len(line) for _, line in floor.frames),
        "schedule_scale": round(scale, 3),
        "server_cpu_s": cpu.get("floor-server"),
        "subscribers_cpu_s": round(sum(v for k, v in cpu.items() if k.startswith("subscribers-")), 1),
        "placements_per_s": rate,
        "throughput_ratio": round(rate / rate_without, 3) if rate and rate_without else None,
        "pipeline": result,
    }


def run(
    args: argparse.Namespace, subs: Subscribers, with_: dict[str, Any], without: dict[str, Any]
) -> dict[str, Any]:
    """The floor's arm: the with-arm's frames, on the without-arm's schedule."""
    key = "first_register_to_last_commit_s"
    scale = without[key] / with_[key]
    floor = Floor(schedule(subs, scale), subs.log, subs)
    try:
        result = pipeline.run(args, floor)
    finally:
        floor.stop()
    return summary(floor, result, without, scale)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", type=Path, required=True)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    uvloop.run(serve(args.serve))


if __name__ == "__main__":
    main()
