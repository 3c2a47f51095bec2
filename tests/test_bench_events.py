"""bench/events.py's reading and judging of what its subscribers received: a frame's index and
events read from its bytes, and a subscriber missing a frame, holding one twice or out of
order, or with an event short is counted short of the log. Pure: no servers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# bench/ is not an installed package: the benchmarks run as `python -m bench.x` from the
# repository's root, which is put on the path here as it is there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.events import Follower, compare
from drover.api.streamgzip import Member, piece

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
