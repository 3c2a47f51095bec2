"""The event hub's delivery to one subscriber: frames already waiting go out as one run (one
write to its socket), a run stops at RUN_BYTES, and every frame still comes once, in order.
No servers: the hub's feed is stood in for by publishing frames to it directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from types import SimpleNamespace
from typing import Any

from drover.api.eventhub import RUN_BYTES, EventHub, Frame, Subscription, frame


class _Feed:
    position = 0


FEED = _Feed()


def _hub() -> EventHub:
    hub = EventHub(SimpleNamespace(), None)  # type: ignore[arg-type]
    FEED.position = 0
    hub._replica = FEED  # type: ignore[assignment]
    return hub


def _frame(index: int, size: int) -> Frame:
    return frame(index, [({"Topic": "Job"}, '{"Topic":"Job","Pad":"' + "x" * size + '"}')])


async def _indexes(runs: AsyncGenerator[list[Frame] | None]) -> list[int]:
    run = await anext(runs)
    assert run is not None
    return [f.index for f in run]


def _publish(hub: EventHub, *frames: Frame) -> None:
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
