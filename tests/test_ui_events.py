"""The console's event stream (/ui/events' body) over the hub, no servers: the hub's feed is
stood in for by publishing frames to it. A tab resuming from an index the ring still holds gets
exactly the positions after it; one from an index the ring has dropped is told to refresh
everything (never a replay of the log); runs that touch none of its topics still move its id
on, at most once a second."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from drover.api.streamhub import RING, Frame, StreamHub, Subscription, frame
from drover.api.ui import live


class _Feed:
    position = 0


def _hub() -> tuple[StreamHub, _Feed]:
    hub = StreamHub(SimpleNamespace(), None)  # type: ignore[arg-type]
    feed = _Feed()
    hub._replica = feed  # type: ignore[assignment]
    return hub, feed


def _alloc(index: int, job: str) -> Frame:
    head = {"Topic": "Allocation", "Type": "PlanResult", "Key": f"a{index}", "Namespace": "default",
            "FilterKeys": [job]}  # fmt: skip
    return frame(index, [(head, b"{}")])


def _publish(hub: StreamHub, feed: _Feed, *frames: Frame) -> None:
    for f in frames:
        feed.position = f.index
        hub.publish(f)


async def _messages(hub: StreamHub, sub: Subscription, after: int, n: int) -> list[bytes]:
    body = live._stream(hub, sub, hub.frames(sub, after, 5.0, replay_log=False), after)
    out = [await anext(body) for _ in range(n)]
    await body.aclose()
    return out


async def test_a_tab_resumes_from_the_ring_after_its_last_index() -> None:
    hub, feed = _hub()
    _publish(hub, feed, *(_alloc(i, "old" if i <= 4 else "new") for i in range(1, 11)))
    tab = Subscription({"Allocation": {"old", "new"}}, "*")
    hello, change = await _messages(hub, tab, 4, 2)
    assert hello.endswith(b"id: 4\nevent: hello\ndata: 4\n\n")
    # Positions 5..10 from the ring (one run), none before: only the new job's allocs are named.
    assert change == live.message("change", 10, "Allocation:new")


async def test_a_tab_behind_the_ring_is_told_to_refresh_everything() -> None:
    hub, feed = _hub()
    _publish(hub, feed, *(_alloc(i, "web") for i in range(1, RING + 11)))  # the ring dropped 1..10
    tab = Subscription({"Allocation": {"web"}}, "*")
    hello, resync = await _messages(hub, tab, 3, 2)
    assert b"event: hello" in hello
    assert resync == live.message("resync", RING + 10, str(RING + 10))


async def test_runs_that_touch_none_of_the_tab_s_topics_move_its_id_at_most_once_a_second() -> None:
    hub, feed = _hub()
    tab = Subscription({"Allocation": {"web"}}, "*")
    body = live._stream(hub, tab, hub.frames(tab, 0, 5.0, replay_log=False), 0)
    assert b"event: hello" in await anext(body)
    live_ticked: list[bytes] = []

    async def read() -> None:
        live_ticked.append(await anext(body))

    reader = asyncio.ensure_future(read())
    await asyncio.sleep(0)
    _publish(hub, feed, _alloc(1, "api"))  # not the tab's: within the first second, nothing sent
    await asyncio.sleep(0.05)
    assert not reader.done()
    await asyncio.sleep(1.0)
    _publish(hub, feed, _alloc(2, "api"))  # a second on: its index, no change
    await asyncio.wait_for(reader, 2)
    assert live_ticked == [live.message("index", 2, "2")]
    _publish(hub, feed, _alloc(3, "web"))
    assert await anext(body) == live.message("change", 3, "Allocation:web")
    await body.aclose()
    assert tab not in hub.subscribers
