"""Fragments pushed down the tabs' event streams, with ACLs on, against the app itself over a
real PostgreSQL (the hub's feed stood in for by publishing frames to it): tabs woken by one
event get the fragments it touches, answered once for them all (one sub-request through the
app), each with its own session's CSRF token; a tab whose token may not read the job is sent
nothing of it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from fastapi.testclient import TestClient
from starlette.requests import Request

from drover.api.aclguard import IDENTITY
from drover.api.streamhub import Subscription
from drover.api.ui import access, csrf, live, push, session
from drover.runtime.store import EventStore

from .test_ui_events import _events, _hub, _publish
from .test_ui_signin import _cluster, _event, _sign_in, _token, client, root  # noqa: F401

WRITE_DEFAULT = 'namespace "default" { policy = "write" }\nnode { policy = "read" }'
FRAGMENT = re.compile(r'<section id="(f-[\w-]+)" class="fragment" data-topics="([^"]+)" hx-get="([^"]*)"')


async def _tab(app: Any, browser: TestClient, secret: str, html: str) -> tuple[Any, str]:
    """A tab of `browser` (signed in with `secret`) showing the page `html`: what pushes to it,
    its CSRF token."""
    browser.get("/ui/")  # its session's CSRF token
    frags = [f"{m[1]} {m[3].replace('&amp;', '&')} {m[2]}" for m in FRAGMENT.finditer(html)]
    token = browser.cookies.get(csrf.COOKIE, path="/ui") or ""
    cookie = f"{csrf.COOKIE}={token}; {session.COOKIE}={browser.cookies.get(session.COOKIE, path='/ui')}"
    who = await app.state.acl.resolve(secret)
    scope = {"type": "http", "app": app, "method": "GET", "path": "/ui/events", "scheme": "http",
             "headers": [(b"cookie", cookie.encode()), (b"host", b"testserver")], "query_string": b"",
             "server": ("testserver", 80), "client": ("127.0.0.1", 1), IDENTITY: who}  # fmt: skip
    request = Request(scope)
    fragments, problems = push.parse(frags)
    assert fragments and not problems, problems
    reader = live.Reader(app.state.acl, secret, who)
    tab = push.tab(request, fragments, lambda: access.key_of(reader.who, True))
    assert tab is not None
    return tab, token


async def test_tabs_woken_by_one_event_share_one_answer_each_with_its_own_token(
    client: TestClient,  # noqa: F811
    root: dict[str, str],  # noqa: F811
    store: EventStore,
) -> None:
    _cluster(client, root, store)
    app: Any = client.app
    writer = _token(client, root, WRITE_DEFAULT, "writer")
    outsider = _token(client, root, 'namespace "secret" { policy = "write" }', "outsider")
    hub, feed = _hub()
    calls: list[str] = []
    inner = push.subrequest

    async def counted(*args: Any) -> push.Answer:
        calls.append(args[2])
        assert args[5] == [f"f-{n}" for n in re.findall(r"fragment=(\w+)", args[2])]
        return await inner(*args)

    push.subrequest = counted  # type: ignore[assignment]
    bodies, tokens = [], []
    try:
        html = ""
        at = store.last_position()  # the event's index: every tab opened just before it
        feed.position = at - 1
        # Three tabs of the writer's (each its own session), and the outsider's on the same page
        # (as a tab whose token lost the job would be).
        for secret in (writer["SecretID"],) * 3 + (outsider["SecretID"],):
            browser = TestClient(app)
            assert _sign_in(browser, secret).status_code == 303
            html = html or browser.get("/ui/jobs/web@default").text
            tab, token = await _tab(app, browser, secret, html)
            topics = {t for f in tab.fragments for t in f.topics}
            sub = Subscription({t.split(":")[0]: {t.split(":")[1]} for t in topics}, "*")
            who = await app.state.acl.resolve(secret)
            reader = live.Reader(app.state.acl, secret, who)
            tab.latest = at - 1
            body = live._stream(hub, sub, hub.frames(sub, at - 1, 5.0, replay_log=False), at - 1, reader, tab)
            assert b"event: hello" in await anext(body)
            bodies.append(body)
            tokens.append(token)
        assert len(set(tokens)) == 4  # four sessions
        _publish(hub, feed, _event(at, "Job", "web", "default"))
        got = await asyncio.gather(*(anext(b) for b in bodies[:3]))
        for mine, chunk in zip(tokens[:3], got, strict=True):
            events = _events(chunk)
            pushed = {
                data.split("\n", 1)[0]: data.split("\n", 1)[1] for _, e, data in events if e == "fragment"
            }
            assert "f-summary" in pushed and 'data-group="web"' in pushed["f-summary"]
            html = "".join(pushed.values())
            # The job page's controls (a writer's), with this tab's CSRF token, never another's.
            assert f'name="csrf_token" value="{mine}"' in html
            assert not any(t in html for t in tokens if t != mine) and push.PLACEHOLDER not in html
            assert events[-1] == (str(at), "index", str(at))
        # One answer for the three tabs: one sub-request, asking for every fragment the event touched.
        [url] = calls
        assert (
            url.startswith("/ui/jobs/web@default?")
            and "fragment=summary&" in url
            and "fragment=versions" in url
        )
        assert {f"f-{n}" for n in re.findall(r"fragment=(\w+)", url)} == set(pushed)
        # The outsider may not read the job: nothing of it (no fragment, no change) reaches its tab.
        try:
            chunk = await asyncio.wait_for(anext(bodies[3]), 1.5)
        except TimeoutError:
            chunk = b""
        # (Not even to fetch them itself, which would show a refusal.)
        assert {e for _, e, _ in _events(chunk)} <= {"index"}, chunk
    finally:
        push.subrequest = inner  # type: ignore[assignment]
        for b in bodies:
            await b.aclose()
