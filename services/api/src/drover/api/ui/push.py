"""Fragments pushed down the tab's event stream (drover.api.ui.live): the tab opens /ui/events
naming its live fragments (`frag=<id> <url> <topic>...`, their same-origin /ui URLs), and when a
run of events touches a fragment's topics the server answers that fragment's URL itself - a GET
through the app in-process, with the tab's sign-in cookie, so the ACL answers as it would for
the tab - and writes the HTML down the stream (`event: fragment`, `data:` lines: the id, then
the HTML). Every tab woken by one event for the same (URL, index, viewer) shares one answer:
one read, one render, then a write per tab, each with its own CSRF token put in (the
sub-request's is a placeholder). The fragments of one page an event touches are asked for in
one request (`?fragment=a&fragment=b`, drover.api.ui.render). An answer that is not a 200 - a 204 that says nothing changed
(the topology page's groups) sends nothing; any other (403, a 204 asking a reload, an error) -
tells the tab to fetch that fragment itself as it did before (`event: refetch`).

A fragment is pushed at most once a second (a hit meanwhile waits for its second); while one
waits, the tab's id does not move past it, so a tab that reconnects (Last-Event-ID) misses
nothing. A pushed fragment names its URL and topics again (its wrapper): the tab's entry
follows it (the topology groups' URLs carry the version they show)."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import unescape
from typing import Any
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit

from drover.api.ui import csrf, render, session
from drover.model.streamevents import parse_topics

# Fragments one tab may name, and how long a URL may be.
MAX_FRAGMENTS = 64
MAX_URL = 2048
# Seconds between two pushes of one fragment to one tab (what the tab's own refreshes kept).
GAP = 1.0
# Seconds a sub-request may take, and the most HTML it may answer.
TIMEOUT = 10.0
MAX_BODY = 4 << 20
# Seconds an answer is kept for the other tabs woken by the same event.
KEEP = 5.0
# The sub-request's CSRF token (the length csrf.token takes): each tab's own is put in its place.
PLACEHOLDER = secrets.token_urlsafe(32)
# What a percent-encoded path and query may hold (no space, control, quote, angle or backslash).
URL_CHARS = re.compile(r"[!#-;=?-\[\]-~]*")
ID = re.compile(r"f-[A-Za-z0-9_-]{1,100}")
WRAPPER = re.compile(r'\s*<section id="(f-[\w-]+)" class="fragment" data-topics="([^"]*)" hx-get="([^"]*)"')
# Paths that are no fragment's: the stream itself, files.
NOT_FRAGMENTS = ("/ui/events", "/ui/static/")


@dataclass
class Live:
    """One live fragment of a tab: what it shows, when it was last pushed, and the index of the
    first hit not pushed yet (0: none)."""

    id: str
    url: str
    topics: frozenset[str]
    pushed: float = float("-inf")
    due: int = 0


def check_url(url: str) -> str | None:
    """What is wrong with `url` as a fragment's (None: nothing): a path of this console's, with
    a `fragment` parameter, percent-encoded (no space, control or non-ASCII character)."""
    if len(url) > MAX_URL:
        return f"is longer than {MAX_URL} characters"
    if not URL_CHARS.fullmatch(url):
        return "holds a character a URL path may not"
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or parts.fragment or not parts.path.startswith("/ui/"):
        return "is not a path of this console (/ui/...)"
    path = unquote(parts.path)
    segments = path.split("/")
    if "" in segments[1:-1] or "." in segments or ".." in segments or "\x00" in path:
        return "is not a plain path"
    if path == NOT_FRAGMENTS[0] or path.startswith(NOT_FRAGMENTS[1]):
        return "is not a fragment's"
    query = parse_qs(parts.query, keep_blank_values=True)
    if not query.get("fragment", [""])[0] or "at" in query:
        return "names no fragment (or names an index)"
    return None


def parse(values: list[str], waits: Sequence[str] = ()) -> tuple[list[Live], list[str]]:
    """`frag=<id> <url> <topic>...` values as the tab's fragments, and every problem found;
    `wait=<id> <ms>`: a fragment the tab was shown less than a second ago (before it opened this
    connection again), not pushed again before `ms` milliseconds."""
    out: list[Live] = []
    problems: list[str] = []
    if len(values) > MAX_FRAGMENTS:
        problems.append(f"Too many fragments: {len(values)}, at most {MAX_FRAGMENTS}")
    seen: set[str] = set()
    for value in values:
        parts = value.split()
        if len(parts) < 3:
            problems.append(f"Invalid frag {value[:200]!r}: expected '<id> <url> <topic>...'")
            continue
        id_, url, *topics = parts
        if not ID.fullmatch(id_):
            problems.append(f"Invalid frag id {id_[:200]!r}: expected f-<name>")
        elif id_ in seen:
            problems.append(f"Fragment {id_!r} named twice")
        seen.add(id_)
        if (wrong := check_url(url)) is not None:
            problems.append(f"Fragment {id_[:200]!r}: its URL {wrong}")
        _, bad = parse_topics(topics)
        problems.extend(f"Fragment {id_[:200]!r}: {p}" for p in bad)
        out.append(Live(id_, url, frozenset(topics)))
    by_id = {f.id: f for f in out}
    now = time.monotonic()
    for value in waits:
        id_, _, ms = value.partition(" ")
        if id_ not in by_id or not ms.isdigit() or not ms.isascii():
            problems.append(f"Invalid wait {value[:200]!r}: expected '<id of a frag> <milliseconds>'")
            continue
        by_id[id_].pushed = now - GAP + min(int(ms), GAP * 1000) / 1000
    return out, problems


@dataclass(frozen=True)
class Answer:
    """A fragment URL's answer at an index for a viewer: the `fragment` event's body after the
    id (`data:` lines, the CSRF token a placeholder), or None: nothing to send (`refetch`:
    tell the tab to fetch it itself); and the URL and topics its wrapper names."""

    body: bytes | None
    refetch: bool = False
    url: str = ""
    topics: frozenset[str] = frozenset()


def _answer(status: int, headers: dict[bytes, bytes], html: str) -> Answer:
    if status == 204 and b"hx-refresh" not in headers:
        return Answer(None)  # unchanged: htmx would have swapped nothing
    if status != 200 or not html:
        return Answer(None, refetch=True)
    html = html.replace("\r", "&#13;")
    body = "".join(f"data: {line}\n" for line in html.split("\n")) + "\n"
    url, topics = "", frozenset[str]()
    if m := WRAPPER.match(html):
        raw = urlsplit(unescape(m[3]))
        url = quote(unquote(raw.path), safe="/@:!$&'()*+,;=~") + ("?" + raw.query if raw.query else "")
        topics = frozenset(m[2].split())
        if check_url(url) is not None:
            url, topics = "", frozenset()
    return Answer(body.encode(), url=url, topics=topics)


Pieces = dict[str, Answer]


def pieces(status: int, headers: dict[bytes, bytes], html: str, ids: list[str]) -> Pieces:
    """The answer for each of the fragments `ids` in the answer to a URL asking for them all
    (drover.api.ui.render.SEPARATOR between them); one it lacks, the tab fetches itself."""
    if len(ids) == 1 or status != 200:
        return dict.fromkeys(ids, _answer(status, headers, html))
    found = {}
    for piece in html.split(render.SEPARATOR):
        if m := WRAPPER.match(piece):
            found[m[1]] = _answer(status, headers, piece)
    return {i: found.get(i, Answer(None, refetch=True)) for i in ids}


@lru_cache(maxsize=4096)
def _page_of(url: str) -> tuple[str, str]:
    """(the URL less its `fragment`, the fragment's name)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    name = next((v for k, v in query if k == "fragment"), "")
    return parts.path + "?" + urlencode([(k, v) for k, v in query if k != "fragment"]), name


def together(fragments: list[Live]) -> list[tuple[str, list[Live]]]:
    """The URLs to ask for `fragments` at: one per page (those whose URLs differ in their
    `fragment` alone), naming them all."""
    pages: dict[str, list[Live]] = {}
    for f in fragments:
        pages.setdefault(_page_of(f.url)[0], []).append(f)
    out = []
    for page, fs in pages.items():
        names = urlencode([("fragment", _page_of(f.url)[1]) for f in fs])
        out.append((fs[0].url if len(fs) == 1 else f"{page}&{names}".replace("?&", "?"), fs))
    return out


async def subrequest(
    app: Any, parent: dict[str, Any], url: str, at: int, cookie: str, ids: list[str]
) -> Pieces:
    """GET `url` (at least as new as `at`) through `app`, as the tab would, with `cookie`: the
    answer for each of the fragments `ids` it asks for."""
    parts = urlsplit(url)
    query = f"{parts.query}&at={at}" if parts.query else f"at={at}"
    keep = {b"host", b"user-agent", b"accept-language"}
    headers = [(k, v) for k, v in parent["headers"] if k in keep]
    headers += [(b"cookie", cookie.encode("latin-1")), (b"hx-request", b"true"), (b"accept", b"text/html")]
    scope = {
        "type": "http", "asgi": parent.get("asgi", {"version": "3.0"}), "http_version": "1.1",
        "method": "GET", "scheme": parent.get("scheme", "http"), "server": parent.get("server"),
        "client": parent.get("client"), "root_path": parent.get("root_path", ""),
        "path": unquote(parts.path), "raw_path": parts.path.encode(), "query_string": query.encode(),
        "headers": headers, "state": dict(parent.get("state") or {}), "extensions": {},
    }  # fmt: skip
    sent = False
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await never.wait()  # the client stays: the answer is not streamed
        return {"type": "http.disconnect"}

    status, answer_headers, chunks, size = 0, {}, [], 0

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, answer_headers, size
        if message["type"] == "http.response.start":
            status = message["status"]
            answer_headers = {k.lower(): v for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            size += len(message.get("body", b""))
            if size > MAX_BODY:
                raise ValueError("the fragment's answer is too large")
            chunks.append(message.get("body", b""))

    try:
        await asyncio.wait_for(app(scope, receive, send), TIMEOUT)
    except Exception:  # the tab fetches it itself, and sees what that answers
        return dict.fromkeys(ids, Answer(None, refetch=True))
    return pieces(status, answer_headers, b"".join(chunks).decode("utf-8", "replace"), ids)


class Answers:
    """Answers shared by the tabs woken by one event: one sub-request per (URL, index, viewer)."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, int, str], tuple[float, asyncio.Future[Pieces]]] = {}

    async def get(self, key: tuple[str, int, str], make: Callable[[], Awaitable[Pieces]]) -> Pieces:
        now = time.monotonic()
        hit = self._answers.get(key)
        if hit is None or now - hit[0] > KEEP:
            if len(self._answers) > 256:
                self._answers = {k: v for k, v in self._answers.items() if now - v[0] <= KEEP}
            future: asyncio.Future[Pieces] = asyncio.ensure_future(make())
            hit = self._answers[key] = (now, future)
        if hit[1].done():  # the tabs after the first: no await, no task
            return hit[1].result()
        return await asyncio.shield(hit[1])


def answers(app: Any) -> Answers:
    state = app.state
    if not hasattr(state, "ui_answers"):
        state.ui_answers = Answers()
    found: Answers = state.ui_answers
    return found


@dataclass
class Tab:
    """What the stream pushes to one tab: its fragments, its CSRF token and sign-in cookie, who
    it is (what a shared answer is keyed by) and the newest index it was sent."""

    fragments: list[Live]
    token: str
    cookie: str
    viewer: Callable[[], str]
    fetch: Callable[[str, int, list[str]], Awaitable[Pieces]]
    latest: int = 0

    def hit(self, found: frozenset[str], index: int) -> None:
        """A run up to `index` touched the topics `found`."""
        for f in self.fragments:
            if not f.due and f.topics & found:
                f.due = index

    def wait(self) -> float | None:
        """Seconds until a waiting hit's push is due (None: none waits)."""
        due = [f.pushed + GAP for f in self.fragments if f.due]
        return max(0.0, min(due) - time.monotonic()) if due else None

    async def flush(self) -> bytes:
        """The pushes due now (their events, and the id once none waits)."""
        now = time.monotonic()
        out: list[bytes] = []
        refetch: list[str] = []
        due = [f for f in self.fragments if f.due and now - f.pushed >= GAP]
        for f in due:
            f.due, f.pushed = 0, now
        for url, fs in together(due):
            answers = await self.fetch(url, self.latest, [f.id for f in fs])
            for f in fs:
                got = answers[f.id]
                if got.body is not None:
                    head = f"event: fragment\ndata: {f.id}\n".encode()
                    out.append(head + got.body.replace(PLACEHOLDER.encode(), self.token.encode()))
                    if got.url:  # (checked as the tab's own are)
                        f.url, f.topics = got.url, got.topics
                elif got.refetch:
                    refetch.append(f.id)
        if refetch:
            out.append(f"event: refetch\ndata: {self.latest} {' '.join(refetch)}\n\n".encode())
        if not any(f.due for f in self.fragments):
            out.append(f"id: {self.latest}\nevent: index\ndata: {self.latest}\n\n".encode())
        return b"".join(out)

    def resynced(self) -> None:
        """The tab refreshes everything itself: nothing waits."""
        for f in self.fragments:
            f.due = 0


def tab(request: Any, fragments: list[Live], viewer: Callable[[], str]) -> Tab | None:
    """The pushing side of the tab's stream (None: it named no fragment, or has no CSRF token
    to put in - it fetches them itself, told which by `change`)."""
    token = request.cookies.get(csrf.COOKIE, "")
    if not fragments or len(token) != len(PLACEHOLDER):
        return None
    cookie = f"{csrf.COOKIE}={PLACEHOLDER}"
    if signed := request.cookies.get(session.COOKIE):
        cookie += f"; {session.COOKIE}={signed}"
    shared = answers(request.app)
    app, parent = request.app, request.scope

    async def fetch(url: str, at: int, ids: list[str]) -> Pieces:
        return await shared.get((url, at, viewer()), lambda: subrequest(app, parent, url, at, cookie, ids))

    return Tab(fragments, token, cookie, viewer, fetch)
