"""The console's event stream (/ui/events' body) over the hub, no servers: the hub's feed is
stood in for by publishing frames to it. A tab resuming from an index the ring still holds gets
exactly the positions after it; one from an index the ring has dropped is told to refresh
everything (never a replay of the log); runs that touch none of its topics still move its id
on, at most once a second. A tab naming its fragments has those an event touches pushed down
the stream (at most once a second each, its id never past a hit not pushed yet), nothing when
one is unchanged (a 204), and is told to fetch one itself when its answer is anything else."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from drover.api.streamhub import RING, Frame, StreamHub, Subscription, frame
from drover.api.ui import live, push, render


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


# ---- fragments pushed down the stream ----------------------------------------------------------


def test_a_fragment_url_must_be_a_path_of_this_console_naming_a_fragment() -> None:
    for url, wrong in [
        ("/ui/jobs?fragment=jobs", None),
        ("/ui/jobs/web%20x@default?fragment=summary&status=running", None),
        ("http://elsewhere.example/ui/jobs?fragment=jobs", "not a path of this console"),
        ("//elsewhere.example/ui/jobs?fragment=jobs", "not a path of this console"),
        ("/v1/jobs?fragment=jobs", "not a path of this console"),
        ("/ui/../v1/jobs?fragment=jobs", "not a plain path"),
        ("/ui/%2e%2e/v1/jobs?fragment=jobs", "not a plain path"),
        ("/ui//jobs?fragment=jobs", "not a plain path"),
        ("/ui/events?fragment=jobs", "not a fragment's"),
        ("/ui/static/drover.js?fragment=jobs", "not a fragment's"),
        ("/ui/jobs", "names no fragment"),
        ("/ui/jobs?fragment=jobs&at=3", "names an index"),
        ("/ui/jobs?fragment=jobs#x", "not a path of this console"),
        ("/ui/jobs\\x?fragment=jobs", "a character a URL path may not"),
        ("/ui/jobs?fragment=jobs" + "x" * 3000, "longer than"),
    ]:
        got = push.check_url(url)
        assert (got is None) if wrong is None else (got is not None and wrong in got), (url, got)


def test_a_tab_naming_bad_fragments_is_told_every_problem() -> None:
    frags, problems = push.parse(["f-jobs /ui/jobs?fragment=jobs Job:*", "f-jobs /ui/jobs?fragment=x Job:*",
                                  "nope /v1/jobs Job:*", "f-a /ui/a?fragment=a Bogus:x", "f-b /ui/b?fragment=b"])  # fmt: skip
    assert [f.id for f in frags] == ["f-jobs", "f-jobs", "nope", "f-a"]
    assert frags[0].url == "/ui/jobs?fragment=jobs" and frags[0].topics == {"Job:*"}
    assert len(problems) == 5, problems
    assert "named twice" in problems[0] and "Invalid frag id 'nope'" in problems[1]
    assert "not a path of this console" in problems[2] and "Unknown topic 'Bogus'" in problems[3]
    assert "expected '<id> <url> <topic>...'" in problems[4]
    # A fragment shown less than a second before the tab opened again waits out its second.
    frags, problems = push.parse(["f-a /ui/a?fragment=a Job:*", "f-b /ui/b?fragment=b Job:*"], ["f-a 400"])
    assert not problems and frags[0].pushed + push.GAP - time.monotonic() == pytest.approx(0.4, abs=0.05)
    assert frags[1].pushed == float("-inf")
    _, problems = push.parse(["f-a /ui/a?fragment=a Job:*"], ["f-b 400", "f-a soon", "f-a"])
    assert len(problems) == 3 and all("Invalid wait" in p for p in problems)
    _, too_many = push.parse([f"f-{i} /ui/x?fragment={i} Job:*" for i in range(push.MAX_FRAGMENTS + 1)])
    assert too_many == [f"Too many fragments: {push.MAX_FRAGMENTS + 1}, at most {push.MAX_FRAGMENTS}"]


def _html(name: str, url: str, topics: str, inner: str) -> str:
    return (f'<section id="f-{name}" class="fragment" data-topics="{topics}" hx-get="{url}" '
            f'hx-trigger="drover:refresh" hx-swap="outerHTML">\n{inner}\n</section>')  # fmt: skip


class _Renders:
    """What the app would answer for a fragment's URL at an index: the calls it got, and an
    answer per URL (status, HTML) that a test sets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.answers: dict[str, tuple[int, dict[bytes, bytes], str]] = {}

    async def fetch(self, url: str, at: int, ids: list[str]) -> push.Pieces:
        self.calls.append((url, at))
        status, headers, html = self.answers[url]
        return push.pieces(status, headers, html.replace("{at}", str(at)), ids)


def _pushing(renders: _Renders, *frags: str) -> push.Tab:
    fragments, problems = push.parse(list(frags))
    assert not problems
    return push.Tab(fragments, "T" * 43, "", lambda: "", renders.fetch)


def _events(chunk: bytes) -> list[tuple[str | None, str, str]]:
    """(id, event, data) of each event in a chunk."""
    out = []
    for block in chunk.decode().split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                k, _, v = line.partition(": ")
                fields.setdefault(k, []).append(v)
        if "event" in fields:
            out.append((fields.get("id", [None])[0], fields["event"][0], "\n".join(fields["data"])))
    return out


async def test_a_touched_fragment_is_pushed_at_most_once_a_second_and_the_id_never_passes_a_hit_not_pushed() -> (
    None
):
    hub, feed = _hub()
    renders = _Renders()
    url = "/ui/jobs/web@default?fragment=allocations"
    renders.answers[url] = (200, {}, _html("allocations", url.replace("&", "&amp;"), "Allocation:web",
                                          f'<p>at {{at}}</p><input name="csrf_token" value="{push.PLACEHOLDER}">'))  # fmt: skip
    tab = _pushing(renders, f"f-allocations {url} Allocation:web", "f-nodes /ui/nodes?fragment=nodes Node:*")
    sub = Subscription({"Allocation": {"web"}, "Node": {"*"}}, "*")
    body = live._stream(hub, sub, hub.frames(sub, 0, 5.0, replay_log=False), 0, tab=tab)
    assert b"event: hello" in await anext(body)
    _publish(hub, feed, _alloc(1, "web"))
    first = _events(await anext(body))
    # Pushed at once: the fragment (the tab's own CSRF token in), then the id.
    assert first == [(None, "fragment", f'f-allocations\n{renders.answers[url][2].replace("{at}", "1")}'
                      .replace(push.PLACEHOLDER, "T" * 43)), ("1", "index", "1")]  # fmt: skip
    assert renders.calls == [(url, 1)]
    # Two more within the second: one push, a second after the first, read at the last index.
    t0 = time.monotonic()
    _publish(hub, feed, _alloc(2, "web"))
    _publish(hub, feed, _alloc(3, "api"))  # not its topics: no push, but the index it is read at
    await asyncio.sleep(0.05)
    _publish(hub, feed, _alloc(4, "web"))
    second = _events(await anext(body))
    assert time.monotonic() - t0 >= 0.8
    assert [(i, e) for i, e, _ in second] == [(None, "fragment"), ("4", "index")]
    assert "<p>at 4</p>" in second[0][2]
    assert renders.calls == [(url, 1), (url, 4)]
    await body.aclose()
    assert sub not in hub.subscribers


async def test_an_unchanged_fragment_is_not_sent_and_a_refused_one_is_fetched_by_the_tab() -> None:
    hub, feed = _hub()
    renders = _Renders()
    same, gone, refused = (
        "/ui/topology?fragment=group&v=1",
        "/ui/topology?fragment=totals",
        "/ui/x?fragment=x",
    )
    renders.answers[same] = (204, {}, "")  # nothing changed: htmx swaps nothing
    renders.answers[gone] = (204, {b"hx-refresh": b"true"}, "")  # the tab must reload: it asks itself
    renders.answers[refused] = (403, {}, "Permission denied")
    tab = _pushing(renders, f"f-group {same} Node:*", f"f-totals {gone} Node:*", f"f-x {refused} Node:*")
    sub = Subscription({"Node": {"*"}}, "*")
    body = live._stream(hub, sub, hub.frames(sub, 0, 5.0, replay_log=False), 0, tab=tab)
    await anext(body)
    _publish(hub, feed, frame(1, [({"Topic": "Node", "Type": "NodeRegistration", "Key": "n1", "Namespace": "",
                                    "FilterKeys": []}, b"{}")]))  # fmt: skip
    assert _events(await anext(body)) == [(None, "refetch", "1 f-totals f-x"), ("1", "index", "1")]
    await body.aclose()


def test_a_pushed_fragment_s_data_lines_rebuild_its_html_exactly() -> None:
    url = "/ui/topology?fragment=group&dc=dc1&v=7"
    html = _html("group-dc1", "/ui/topology?fragment=group&amp;dc=dc1&amp;v=8", "Node:* Allocation:*",
                 "<pre>one\r\ntwo\n\nthree</pre>")  # fmt: skip
    got = push._answer(200, {}, html)
    assert got.body is not None
    [(_, _, data)] = _events(b"event: fragment\ndata: f-group-dc1\n" + got.body)
    # The tab's HTML: what the app answered (a carriage return as its character reference).
    assert data == "f-group-dc1\n" + html.replace("\r", "&#13;")
    # The URL and topics the new wrapper names, which the tab's entry follows.
    assert (got.url, got.topics) == ("/ui/topology?fragment=group&dc=dc1&v=8", {"Node:*", "Allocation:*"})
    assert url != got.url


def test_a_live_refresh_for_an_event_the_feed_has_reached_takes_the_feed_s_position_as_its_index() -> None:
    """(No log query per refresh: every event up to the feed's position is committed, with its
    projections.) An index past the feed's, or none, is asked of the log."""
    hub, feed = _hub()
    feed.position = 7
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(stream=hub)))
    assert [render._known(request, at) for at in ("5", "7", "8", "", "x", "0")] == [7, 7, 0, 0, 0, 0]  # type: ignore[arg-type]
    assert render._known(SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace())), "5") == 0  # type: ignore[arg-type]


async def test_fragments_of_one_page_touched_together_are_asked_for_in_one_request() -> None:
    hub, feed = _hub()
    renders = _Renders()
    job = "/ui/jobs/web@default?fragment="
    both = "/ui/jobs/web@default?fragment=summary&fragment=allocations"
    renders.answers[both] = (200, {}, render.SEPARATOR.join(
        _html(n, job + n, "Allocation:web", f"<p>{n} at {{at}}</p>") for n in ("summary", "allocations")))  # fmt: skip
    renders.answers["/ui/nodes?fragment=nodes"] = (
        200,
        {},
        _html("nodes", "/ui/nodes?fragment=nodes", "Node:*", "n"),
    )
    tab = _pushing(renders, f"f-summary {job}summary Allocation:web", "f-nodes /ui/nodes?fragment=nodes Node:*",
                   f"f-allocations {job}allocations Allocation:web", f"f-missing {job}missing Allocation:web")  # fmt: skip
    sub = Subscription({"Allocation": {"web"}, "Node": {"*"}}, "*")
    body = live._stream(hub, sub, hub.frames(sub, 0, 5.0, replay_log=False), 0, tab=tab)
    await anext(body)
    renders.answers[f"{both}&fragment=missing"] = renders.answers.pop(both)  # the page lacks one
    _publish(hub, feed, _alloc(1, "web"))
    events = _events(await anext(body))
    assert renders.calls == [(f"{both}&fragment=missing", 1)]
    assert [(e, d.split("\n")[0]) for _, e, d in events] == [
        ("fragment", "f-summary"), ("fragment", "f-allocations"), ("refetch", "1 f-missing"), ("index", "1")]  # fmt: skip
    assert "<p>allocations at 1</p>" in events[1][2] and "summary" not in events[1][2]
    await body.aclose()
