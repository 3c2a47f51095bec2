"""bench/events.py's reading and judging of what its subscribers received: a frame's index and
events read from its bytes, and a subscriber missing a frame, holding one twice or out of
order, or with an event short is counted short of the log; the log's frames as the API
describes them, replayed from a real log; bench/eventfloor.py's server and schedule (a plain
socket)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# bench/ is not an installed package: the benchmarks run as `python -m bench.x` from the
# repository's root, which is put on the path here as it is there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.eventfloor import Connection, deliver, schedule
from bench.events import Follower, Subscribers, against_floor, compare, replay
from drover.api.streamgzip import Member, piece


def test_the_log_replayed_gives_each_position_its_stream_events(store: Any) -> None:
    """What the subscribers are judged against: the frames the API would send, from the log."""
    from drover.model import Job, Node
    from drover.model.events import JobRegistered, NodeEligibilityUpdated, NodeRegistered

    store.append([NodeRegistered(node=Node(id="n1")), NodeRegistered(node=Node(id="n2"))])
    store.append([JobRegistered(job=Job(id="web"))])
    store.append([NodeEligibilityUpdated(node_id="n2", eligibility="ineligible")])
    last = store.last_position()
    frames = replay(store, 1, last, lines := {})
    # Every position after `after` has stream events; each one's count is what its line holds.
    assert sorted(frames) == list(range(2, last + 1)), frames
    for position, (count, _) in frames.items():
        assert count >= 1
        assert json.loads(lines[position])["Index"] == position
        assert len(json.loads(lines[position])["Events"]) == count


# The log's frames after position 10 up to 14: position -> (its events, its commit time).
LOG = {11: (1, 100.0), 12: (3, 100.5), 14: (2, 101.0)}


def received(*frames: tuple[int, int, float], closed: int = 0) -> dict[str, Any]:
    return {
        "index": [i for i, _, _ in frames],
        "events": [n for _, n, _ in frames],
        "arrival": [t for _, _, t in frames],
        "closed": closed,
    }


def _response(*lines: bytes, chunk: int) -> bytes:
    """An HTTP/1.1 response whose body is `lines`, in chunks of at most `chunk` bytes."""
    body = b"".join(lines)
    out = [b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"]
    for i in range(0, len(body), chunk):
        piece = body[i : i + chunk]
        out.append(b"%x;ext=1\r\n" % len(piece) + piece + b"\r\n")
    return b"".join(out)


class _Transport:
    closed = False

    def close(self) -> None:
        self.closed = True


def _feed(f: Follower, data: bytes, read: int) -> None:
    """`data` handed to `f` as its socket would, at most `read` bytes a time."""
    f.connection_made(_Transport())  # type: ignore[arg-type]
    for i in range(0, len(data), read):
        piece = data[i : i + read]
        buf = f.get_buffer(len(piece))
        buf[: len(piece)] = piece
        f.buffer_updated(len(piece))


def test_frames_are_read_from_the_chunked_body_however_it_is_split() -> None:
    """Every split of the bytes (chunks, reads, an event's start cut in two) gives the same frames."""
    event = {"Topic": "Job", "Type": "JobRegistered", "Payload": {"Job": {"Name": 'a "Topic" b'}}}
    line = json.dumps({"Index": 12, "Events": [event, event, event]}, separators=(",", ":")).encode()
    small = json.dumps({"Index": 13, "Events": [event]}, separators=(",", ":")).encode()
    body = [b"{}\n", line + b"\n", small + b"\n", b'{"Error":"subscription closed by server"}\n']
    for chunk, read in [(29, 7), (29, 1), (29, 4096), (1, 3), (10_000, 13)]:
        data = _response(*body, chunk=chunk) + b"0\r\n\r\n"
        f = Follower("http://127.0.0.1:1", 11)
        _feed(f, data, read)
        got = (f.index, f.events, f.closed, f.next, f.connected.is_set())
        assert got == ([12, 13], [3, 1], 1, 14, True), (chunk, read)
        assert f.transport is not None and f.transport.closed  # type: ignore[attr-defined]
    # Gzipped (the API's pieces: each line compressed on its own), read the same.
    member = Member()
    packed = [member.write([piece(x)]) for x in body] + [member.end()]
    for chunk, read in [(29, 7), (1, 3), (10_000, 13)]:
        f = Follower("http://127.0.0.1:1", 11, gzip=True)
        _feed(f, _response(*packed, chunk=chunk) + b"0\r\n\r\n", read)
        assert (f.index, f.events, f.closed, f.next) == ([12, 13], [3, 1], 1, 14), (chunk, read)


def test_subscribers_against_the_log() -> None:
    whole = received((11, 1, 100.02), (12, 3, 100.6), (14, 2, 101.3), (15, 1, 102.0))  # 15: past the window
    out = compare(
        [
            whole,
            received((11, 1, 100.1), (14, 2, 101.1)),  # 12 missing
            received((11, 1, 100.1), (12, 3, 100.6), (12, 3, 100.7), (14, 2, 101.1)),  # 12 twice
            received((12, 3, 100.6), (11, 1, 100.7), (14, 2, 101.1)),  # out of order
            received((11, 1, 100.1), (12, 2, 100.6), (14, 2, 101.1), closed=1),  # an event short
        ],
        LOG,
        10,
        14,
    )
    assert out["window"] == {"after": 10, "last": 14, "log_positions": 4, "frames": 3}
    assert out["log_events"] == 6
    assert out["subscribers_short"] == 4 and not out["every_event_to_every_subscriber_in_order"]
    per = out["per_subscriber"]
    assert per[0] == {
        "frames": 3, "events": 6, "in_order_once": True, "missing": 0, "extra": 0, "wrong_event_count": 0,
        "closed_by_server": 0,
    }  # fmt: skip
    assert per[1]["missing"] == 1 and not per[2]["in_order_once"] and not per[3]["in_order_once"]
    assert per[4]["wrong_event_count"] == 1 and per[4]["closed_by_server"] == 1
    assert out["lag_ms"]["max"] == 700.0  # 11, come after 12
    alone = compare([whole], LOG, 10, 14)
    assert alone["every_event_to_every_subscriber_in_order"] and alone["events_received"] == [6]
    assert alone["lag_ms"] == {"p50": 100.0, "p99": 300.0, "max": 300.0}


def test_the_floor_server_delivers_each_frame_at_its_offset_to_every_subscriber() -> None:
    """bench/eventfloor.py's server, on a real socket: every subscriber gets every frame line,
    in order, none before its offset; frames due together come in one chunk."""
    frames = [(0.0, _line(12, 3)), (0.0, _line(13, 1)), (0.2, _line(15, 2))]

    async def run() -> tuple[list[Follower], float]:
        live: set[asyncio.WriteTransport] = set()
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Connection(live), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        followers = [Follower(f"http://127.0.0.1:{port}", 12) for _ in range(3)]
        tasks = [asyncio.create_task(f.follow("127.0.0.1", port)) for f in followers]
        await asyncio.wait_for(asyncio.gather(*(f.connected.wait() for f in followers)), 10)
        start = time.time()
        assert await deliver(frames, live) == 2
        await asyncio.wait_for(_until(lambda: all(f.index[-1:] == [15] for f in followers)), 10)
        for t in tasks:
            t.cancel()
        server.close()
        return followers, start

    followers, start = asyncio.run(run())
    for f in followers:
        assert (f.index, f.events) == ([12, 13, 15], [3, 1, 2])
        assert f.arrival[2] >= start + 0.2 and f.arrival[0] < start + 0.2


def _line(index: int, events: int) -> bytes:
    return (
        json.dumps({"Index": index, "Events": [{"Topic": "Job"}] * events}, separators=(",", ":")).encode()
        + b"\n"
    )


async def _until(done: Callable[[], bool]) -> None:
    while not done():
        await asyncio.sleep(0.01)


def test_the_floor_schedule_is_the_with_arms_commit_offsets_scaled() -> None:
    subs = Subscribers(2, 1, keep=True)
    subs.started = 100.0
    subs.log = {11: (1, 100.0), 12: (3, 101.0), 14: (2, 103.0), 15: (1, 99.0)}
    assert subs.lines is not None
    subs.lines.update({11: b"a\n", 12: b"b\n", 14: b"c\n", 15: b"d\n"})
    # Scaled by the without-arm's length over the with-arm's; a commit before the start at 0.
    assert schedule(subs, 0.5) == [(0.0, b"a\n"), (0.5, b"b\n"), (1.5, b"c\n"), (0.0, b"d\n")]


def test_the_api_per_subscriber_over_the_floors_server() -> None:
    out: dict[str, Any] = {"subscribers": 50, "api_cpu_s_per_subscriber": 0.104, "targets": {},
                           "floor": {"server_cpu_s": 1.7}}  # fmt: skip
    against_floor(out)
    assert out["floor"]["server_cpu_s_per_subscriber"] == 0.034
    assert (
        out["api_cpu_per_subscriber_x_floor"] == 3.06
        and out["targets"]["api_cpu_per_subscriber_x_floor"] == "<= 2"
    )
    # Without the API's figure (an arm's CPU not measured) there is no ratio.
    missing: dict[str, Any] = {"subscribers": 50, "api_cpu_s_per_subscriber": None, "targets": {},
                               "floor": {"server_cpu_s": 1.7}}  # fmt: skip
    against_floor(missing)
    assert "api_cpu_per_subscriber_x_floor" not in missing
