"""The event hub's delivery to one subscriber: frames already waiting go out as one run (one
write to its socket), a run stops at RUN_BYTES, frames published within the coalescing window
are handed over together, and every frame still comes once, in order; gzipped, the same stream.
No servers: the hub's feed is stood in for by publishing frames to it directly."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncGenerator, AsyncIterator
from types import SimpleNamespace
from typing import Any

from drover.api.routes.events import OVERFLOWED, _gzipped, _lines
from drover.api.streamhub import RUN_BYTES, Frame, RunLines, StreamHub, Subscription, frame


class _Feed:
    position = 0


FEED = _Feed()


def _hub(coalesce: float = 0.0) -> StreamHub:
    hub = StreamHub(SimpleNamespace(), None, coalesce=coalesce)  # type: ignore[arg-type]
    FEED.position = 0
    hub._replica = FEED  # type: ignore[assignment]
    return hub


def _frame(index: int, size: int) -> Frame:
    head = {"Topic": "Job", "Type": "JobRegistered", "Key": "j", "Namespace": "default", "FilterKeys": None}
    return frame(index, [({**head, "Index": index}, b'{"Topic":"Job","Pad":"' + b"x" * size + b'"}')])


async def _indexes(runs: AsyncGenerator[list[Frame] | None]) -> list[int]:
    run = await anext(runs)
    assert run is not None
    return [f.index for f in run]


def _publish(hub: StreamHub, *frames: Frame) -> None:
    for f in frames:
        FEED.position = f.index
        hub.publish(f)


async def test_waiting_frames_go_out_as_one_run_up_to_its_size() -> None:
    hub = _hub()
    sub = Subscription({"*": {"*"}}, "*")
    runs = hub.frames(sub, 0, heartbeat=5.0)
    first = asyncio.ensure_future(anext(runs))
    await asyncio.sleep(0)  # the subscriber has joined the feed and waits
    _publish(hub, _frame(1, 10))
    assert [f.index for f in await first or []] == [1]
    # Published while it was busy: small ones together, a run closed once it passes RUN_BYTES.
    big = RUN_BYTES // 2
    _publish(hub, _frame(2, 10), _frame(3, 10), _frame(4, big), _frame(5, big), _frame(6, 10))
    got: list[list[int]] = []
    while sum(map(len, got)) < 5:
        got.append(await _indexes(runs))
    assert got == [[2, 3, 4, 5], [6]]
    await runs.aclose()
    assert sub not in hub.subscribers


async def test_frames_published_within_the_window_reach_each_subscriber_in_one_run() -> None:
    """With a coalescing window, the frames published within it wake a subscriber once, as one
    run, not before the window ends; one joining meanwhile takes them from the ring, and each
    frame still comes once, in order."""
    hub = _hub(coalesce=0.05)
    runs = hub.frames(Subscription({"*": {"*"}}, "*"), 0, heartbeat=5.0)
    first = asyncio.ensure_future(anext(runs))
    await asyncio.sleep(0)  # joined, waiting
    loop = asyncio.get_running_loop()
    start = loop.time()
    _publish(hub, _frame(1, 10))
    await asyncio.sleep(0.01)
    assert not first.done()
    _publish(hub, _frame(2, 10), _frame(3, 10))
    late = hub.frames(Subscription({"*": {"*"}}, "*"), 1, heartbeat=5.0)  # after position 1
    assert await _indexes(late) == [2, 3]
    assert [f.index for f in await first or []] == [1, 2, 3]
    assert loop.time() - start >= 0.04
    _publish(hub, _frame(4, 10))
    assert await _indexes(late) == [4]  # 2 and 3 not again
    assert await _indexes(runs) == [4]
    await runs.aclose()
    await late.aclose()


async def test_a_backlog_is_sent_in_runs_of_at_most_run_bytes() -> None:
    hub = _hub()
    third = RUN_BYTES // 3
    _publish(hub, *(_frame(i, third) for i in range(1, 8)))
    sub = Subscription({"*": {"*"}}, "*")
    runs = hub.frames(sub, 2, heartbeat=5.0)  # after position 2: from the ring
    got: list[list[int]] = []
    while sum(map(len, got)) < 5:
        got.append(await _indexes(runs))
    assert got == [[3, 4], [5, 6], [7]]
    await runs.aclose()


async def test_a_quiet_stream_gets_a_heartbeat() -> None:
    hub = _hub()
    runs = hub.frames(Subscription({"*": {"*"}}, "*"), 0, heartbeat=0.05)
    got: Any = await asyncio.wait_for(anext(runs), 2)
    assert got is None
    await runs.aclose()


async def _drain(chunks: AsyncIterator[bytes]) -> list[bytes]:
    return [c async for c in chunks]


async def test_the_gzip_stream_is_the_plain_stream_compressed_whole_at_every_write() -> None:
    """Two subscribers, one plain and one gzipped, fed the same frames until both fall behind
    and are closed: the gzip stream decodes (its trailer's CRC and length checked) to exactly
    the plain one, and each of its writes decodes at once to whole lines."""
    hub = _hub()
    subs = [Subscription({"*": {"*"}}, "*", buffer=3) for _ in range(2)]
    plain = asyncio.ensure_future(_drain(_lines(subs[0], hub.frames(subs[0], 0, 5.0), hub.runs)))
    gzipped = asyncio.ensure_future(_drain(_gzipped(subs[1], hub.frames(subs[1], 0, 5.0))))
    await asyncio.sleep(0.01)  # both have joined the feed
    _publish(hub, _frame(1, 10), _frame(2, 300_000))
    await asyncio.sleep(0.01)  # both have sent them
    _publish(hub, *(_frame(i, 50) for i in range(3, 9)))  # more than their buffer
    plain_chunks, gz_chunks = await asyncio.gather(plain, gzipped)
    assert plain_chunks[0] == b"{}\n" and plain_chunks[-1] == OVERFLOWED
    # What it had taken before it fell behind, in order, then the error.
    sent = [json.loads(x)["Index"] for x in b"".join(plain_chunks).splitlines()[1:-1]]
    assert sent == list(range(1, len(sent) + 1)) and 2 <= len(sent) < 8
    assert gzip.decompress(b"".join(gz_chunks)) == b"".join(plain_chunks)
    d = zlib.decompressobj(31)
    decoded = [d.decompress(c) for c in gz_chunks]
    assert all(x.endswith(b"\n") for x in decoded[:-1]) and decoded[-1] == b""
    assert d.eof and not d.unused_data


def test_a_run_is_joined_once_for_the_subscribers_sent_it() -> None:
    """Subscribers asking the same, sent the same run, write one bytes object; another
    subscription gets the lines it matches, joined for it."""
    runs = RunLines(size=2)
    run = [_frame(1, 10), _frame(2, 20), _frame(3, 30)]
    every = [Subscription({"*": {"*"}}, "*") for _ in range(3)]
    lines = [runs.line(sub, run) for sub in every]
    assert lines[0] == b"".join(f.line for f in run)
    assert all(line is lines[0] for line in lines)
    nodes = Subscription({"Node": {"*"}}, "*")
    assert runs.line(nodes, run) is None  # none of the run's events is a node's
    assert runs.line(every[0], run[:1]) is run[0].line  # one frame: its own line
    # The newest runs are kept, the oldest let go (a position's frame is the same for every
    # subscriber: one log, one feed).
    for first in range(10, 14):
        runs.line(every[0], [_frame(first, 1), _frame(first + 1, 1)])
    again = runs.line(every[0], run)
    assert again == lines[0] and again is not lines[0]


def test_a_frames_line_holds_its_events_in_order() -> None:
    head = {"Topic": "Node", "Type": "NodeRegistration", "Namespace": "", "FilterKeys": None, "Index": 7}
    texts = [({**head, "Key": k}, b'{"Key":"%s"}' % k.encode()) for k in ("a", "b", "c")]
    for n in range(4):
        f = frame(7, texts[:n])
        assert json.loads(f.line) == {"Index": 7, "Events": [{"Key": k} for k in "abc"[:n]]}
        assert f.line.endswith(b"}\n") and f.line.count(b"\n") == 1


def test_a_subscriber_to_everything_gets_each_frame_whole_and_others_are_matched() -> None:
    job = {"Topic": "Job", "Type": "JobRegistered", "Key": "j", "FilterKeys": None, "Index": 3}
    f = frame(3, [({**job, "Namespace": "default"}, b'{"a":1}'), ({**job, "Namespace": "prod"}, b'{"b":2}')])
    assert Subscription({"*": {"*"}}, "*").encode(f) is f.line
    assert Subscription({"*": {"*"}}, "*").encode(frame(4, [])) is None
    assert json.loads(Subscription({"*": {"*"}}, "prod").encode(f) or b"")["Events"] == [{"b": 2}]
    assert Subscription({"Node": {"*"}}, "*").encode(f) is None
