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

# The log's frames after position 10 up to 14: position -> (its events, its commit time).
LOG = {11: (1, 100.0), 12: (3, 100.5), 14: (2, 101.0)}


def received(*frames: tuple[int, int, float], closed: int = 0) -> dict[str, Any]:
    return {
        "index": [i for i, _, _ in frames],
        "events": [n for _, n, _ in frames],
        "arrival": [t for _, _, t in frames],
        "closed": closed,
    }


def test_a_frame_is_read_from_its_bytes() -> None:
    f = Follower("http://127.0.0.1:1", 11)
    event = {"Topic": "Job", "Type": "JobRegistered", "Payload": {"Job": {"Name": '{"Topic":"x"'}}}
    line = json.dumps({"Index": 12, "Events": [event, event]}, separators=(",", ":")).encode()
    for text in (b"{}", line, b'{"Error":"subscription closed by server"}'):
        f.take(text, 7.0)
    assert (f.index, f.events, f.arrival, f.closed, f.next) == ([12], [2], [7.0], 1, 13)


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
