"""Rendering: one Jinja2 environment (autoescaped, templates compiled once), the filters the
templates share, and the page/fragment scheme every page family uses.

A page is a list of fragments. Each fragment has a template, a loader (the reads it needs, run
in a worker thread with the others of the page) and the event-stream topics it shows
(`Topic:Key`, `*` for every key). A page renders them all; `?fragment=<name>` on the page's URL
renders that one alone (`?fragment=a&fragment=b`: several, one answer), which is what the tab's
event stream pushes when an event touches its topics (drover.api.ui.live, drover.api.ui.push),
and what htmx fetches when the stream cannot push it (static/drover.js)."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from drover.api.commands import Commands
from drover.api.ui import access, csrf
from drover.control.change import Change
from drover.control.errors import CommandError
from drover.model.summary import JobSummary
from drover.runtime.store.queries import Reads

TEMPLATES = Path(__file__).parent / "templates"
HTMX = "htmx-2.0.11.min.js"
THEME_COOKIE = "drover_theme"
FLASH_COOKIE = "drover_flash"
THEMES = ("light", "dark")

# Scripts only from the console's own files (no inline script, no eval: htmx runs without
# them), its pages never framed by another site (clickjacking its buttons) nor posting elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

Context = dict[str, Any]
# None: the page's object is not there (a 404).
Loader = Callable[[Reads, Mapping[str, Any]], Context | None]


@dataclass(frozen=True)
class Fragment:
    name: str
    template: str
    load: Loader
    topics: Callable[[Context], list[str]]
    # Loaded only when asked for (opening the <details> around it), and not kept live: for what
    # costs more than a page should (every client judged).
    lazy: bool = False


def ago(ns_or_dt: int | datetime | None, now: float | None = None) -> str:
    """`3m ago`, `2h ago`, `5d ago` for a time in Unix nanoseconds (or a datetime)."""
    if not ns_or_dt:
        return "-"
    then = ns_or_dt.timestamp() if isinstance(ns_or_dt, datetime) else ns_or_dt / 1e9
    seconds = int((now if now is not None else time.time()) - then)
    if seconds < 0:
        return "in " + ago(int((now or time.time()) * 1e9), then).removesuffix(" ago")
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def timestamp(ns_or_dt: int | datetime | None) -> str:
    """The time in UTC, ISO 8601 to the second (what a `<time datetime>` carries)."""
    if not ns_or_dt:
        return ""
    dt = ns_or_dt if isinstance(ns_or_dt, datetime) else datetime.fromtimestamp(ns_or_dt / 1e9, UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def short(id_: str) -> str:
    """An ID's first 8 characters, as Nomad's tables show them."""
    return id_[:8]


def totals(summary: JobSummary) -> dict[str, int]:
    """A job summary's alloc counts over all its groups, by status."""
    out = dict.fromkeys(("queued", "starting", "running", "failed", "lost", "complete", "unknown"), 0)
    for group in summary.summary.values():
        for k in out:
            out[k] += getattr(group, k)
    return out


def job_ref(namespace: str, job_id: str) -> str:
    """A job's reference in console URLs, Nomad's UI's `<id>@<namespace>`."""
    return f"{job_id}@{namespace}"


def split_ref(ref: str) -> tuple[str, str]:
    """(namespace, ID) of a `job_ref` (no namespace: `default`)."""
    job_id, at, namespace = ref.rpartition("@")
    return (namespace, job_id) if at and namespace else ("default", ref)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )
    env.filters.update(ago=ago, timestamp=timestamp, short=short)
    env.globals.update(job_ref=job_ref, totals=totals, htmx=HTMX)
    return env


ENV = _env()


def _query(request: Request, **changes: str) -> str:
    """The request's query with `changes` (an empty value removes the parameter)."""
    params = {k: v for k, v in request.query_params.items() if k not in ("fragment", "at")}
    params.update(changes)
    q = urlencode({k: v for k, v in params.items() if v})
    return "?" + q if q else ""


def base_context(request: Request) -> Context:
    theme = request.cookies.get(THEME_COOKIE, "")
    flash = None
    if raw := request.cookies.get(FLASH_COOKIE):
        try:
            flash = json.loads(base64.urlsafe_b64decode(raw.encode()))
        except ValueError:
            flash = None
    return {
        "request": request,
        "path": request.url.path,
        "theme": theme if theme in THEMES else "",
        "csrf_token": csrf.token(request),
        "can": lambda capability, namespace="default": access.may(request, capability, namespace),
        "who": access.who(request),
        "query": lambda **changes: _query(request, **changes),
        "flash": flash if isinstance(flash, dict) else None,
    }


def finish(request: Request, response: Response) -> Response:
    """The console's headers on an answer (and the CSRF cookie of a new session)."""
    return _finish(request, response)


def _finish(request: Request, response: Response) -> Response:
    csrf.remember(request, response)
    if FLASH_COOKIE in request.cookies:
        response.delete_cookie(FLASH_COOKIE, path="/ui")
    response.headers["Cache-Control"] = "no-store"
    response.headers.update(SECURITY_HEADERS)
    return response


class Loads:
    """What a fragment's loader read, by the URL it was read for, with the log index read before
    it. A live refresh names the index that woke it (`?at=N`) and is answered from a load at N
    or later when there is one: every tab woken by one event then costs one read, not one each.
    The fragment rendered from it is kept too, for a second, per viewer (what the console lets
    them do shapes it), its CSRF token a placeholder put in per request: the tabs after the
    first cost no render either."""

    # Seconds a rendered fragment is served again (its "3s ago" stays about right).
    RENDERED_FOR = 1.0

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._entries: OrderedDict[str, tuple[int, Context | None]] = OrderedDict()
        self._rendered: dict[str, tuple[int, float, dict[str, str]]] = {}
        # Unguessable: no content the fragment shows can hold it.
        self.placeholder = secrets.token_urlsafe(32)

    def get(self, key: str, at: int) -> tuple[int, Context | None] | None:
        hit = self._entries.get(key)
        if hit is None or hit[0] < at:
            return None
        self._entries.move_to_end(key)
        return hit

    def put(self, key: str, index: int, ctx: Context | None) -> None:
        self._entries[key] = (index, ctx)
        self._entries.move_to_end(key)
        self._rendered.pop(key, None)
        while len(self._entries) > self.size:
            old, _ = self._entries.popitem(last=False)
            self._rendered.pop(old, None)

    def rendered(self, key: str, index: int, viewer: str) -> str | None:
        """The fragment rendered from the load at `index` for `viewer`, if lately."""
        hit = self._rendered.get(key)
        if hit is None or hit[0] != index or time.monotonic() - hit[1] > self.RENDERED_FOR:
            return None
        return hit[2].get(viewer)

    def keep_rendered(self, key: str, index: int, viewer: str, html: str) -> None:
        hit = self._rendered.get(key)
        if hit is None or hit[0] != index or time.monotonic() - hit[1] > self.RENDERED_FOR:
            hit = self._rendered[key] = (index, time.monotonic(), {})
        hit[2][viewer] = html


def _loads(request: Request) -> Loads:
    state = request.app.state
    if not hasattr(state, "ui_loads"):
        state.ui_loads = Loads()
    loads: Loads = state.ui_loads
    return loads


def _wrap(request: Request, fragment: Fragment, ctx: Context) -> Markup:
    """The fragment's HTML in its live wrapper: what htmx swaps in whole."""
    inner = Markup(ENV.get_template(fragment.template).render(ctx))
    url = request.url.path + _query(request, fragment=fragment.name)
    topics = "" if fragment.lazy else " ".join(sorted(set(fragment.topics(ctx))))
    return Markup(
        ENV.get_template("fragment.html").render(name=fragment.name, url=url, topics=topics, inner=inner)
    )


async def page(
    request: Request, reads: Reads, template: str, fragments: list[Fragment], args: Mapping[str, Any],
    *, vary: str = "", **extra: Any,
) -> Response:  # fmt: skip
    """The page `template` with every fragment rendered into `fragments.<name>`, or, given
    `?fragment=`, that fragment alone. A loader returning None means the page's object is not
    there: 404. `vary`: what else than the URL the loads depend on (the namespaces a token may
    read), so that a load shared between tabs is shared only by those that may see it."""
    names = request.query_params.getlist("fragment")
    if len(names) > 1:
        return await _several(request, reads, fragments, names, args, vary, extra)
    wanted = names[0] if names else None
    chosen = [f for f in fragments if f.name == wanted] if wanted else [f for f in fragments if not f.lazy]
    if wanted and not chosen:
        return _finish(request, HTMLResponse("unknown fragment", status_code=404))

    at = request.query_params.get("at", "")
    known = _known(request, at) if wanted else 0

    def load() -> tuple[int, list[Context | None]]:
        # The index first: what the page shows is at least as new as the index the tab resumes from.
        return known or reads.index(), [f.load(reads, args) for f in chosen]

    key = request.url.path + _query(request, fragment=wanted or "", at="") + "\x00" + vary
    loads = _loads(request)
    hit = loads.get(key, int(at)) if wanted and at.isdigit() and at.isascii() else None
    if hit is not None:
        index, loaded = hit[0], [hit[1]]
    else:
        index, loaded = await asyncio.to_thread(load)
        if wanted:
            loads.put(key, index, loaded[0])
    base = base_context(request)
    if any(c is None for c in loaded):
        return not_found(request, base)
    if wanted:
        return _finish(
            request,
            HTMLResponse(_fragment(request, loads, key, index, chosen[0], base, args, extra, loaded[0])),
        )
    contexts = [{**base, **args, **extra, **c} for c in loaded if c is not None]
    rendered = {f.name: _wrap(request, f, c) for f, c in zip(chosen, contexts, strict=True)}
    for f in fragments:
        if f.lazy:
            url = request.url.path + _query(request, fragment=f.name)
            rendered[f.name] = Markup(ENV.get_template("lazy.html").render(name=f.name, url=url))
    ctx = {**base, **args, **extra, "fragments": rendered, "index": index}
    for c in contexts:
        ctx.update({k: v for k, v in c.items() if k not in ctx})
    return _finish(request, HTMLResponse(ENV.get_template(template).render(ctx)))


# Between the fragments of an answer asking for several (`?fragment=a&fragment=b`).
SEPARATOR = "\n<!--drover:fragment-->\n"


async def _several(
    request: Request, reads: Reads, fragments: list[Fragment], names: list[str], args: Mapping[str, Any],
    vary: str, extra: Mapping[str, Any],
) -> Response:  # fmt: skip
    """Several fragments of the page in one answer, SEPARATOR between them (what the event stream
    pushes for one event, drover.api.ui.push): each loaded and rendered as when asked for alone
    (its own load, shared with the tabs asking for it alone), the loads made together."""
    by_name = {f.name: f for f in fragments}
    if any(n not in by_name for n in names) or len(set(names)) != len(names):
        return _finish(request, HTMLResponse("unknown fragment", status_code=404))
    chosen = [by_name[n] for n in names]
    at = request.query_params.get("at", "")
    known = _known(request, at)
    loads = _loads(request)
    keys = [request.url.path + _query(request, fragment=f.name, at="") + "\x00" + vary for f in chosen]
    hits = [loads.get(k, int(at)) if at.isdigit() and at.isascii() else None for k in keys]
    missing = [i for i, hit in enumerate(hits) if hit is None]

    def load() -> tuple[int, list[Context | None]]:
        return known or reads.index(), [chosen[i].load(reads, args) for i in missing]

    if missing:
        index, loaded = await asyncio.to_thread(load)
        for i, ctx in zip(missing, loaded, strict=True):
            loads.put(keys[i], index, ctx)
            hits[i] = (index, ctx)
    base = base_context(request)
    found = [hit for hit in hits if hit is not None and hit[1] is not None]
    if len(found) < len(chosen):
        return not_found(request, base)
    html = SEPARATOR.join(
        _fragment(request, loads, key, hit[0], f, base, args, extra, hit[1])
        for key, hit, f in zip(keys, found, chosen, strict=True)
    )
    return _finish(request, HTMLResponse(html))


def _known(request: Request, at: str) -> int:
    """For a live refresh (`at`), an index every read from now on is at least as new as without
    asking the log: the event feed's position, once it has reached `at` (it carries committed
    events alone, and the projections commit with them). 0: ask the log."""
    hub = getattr(request.app.state, "stream", None)
    position = hub.position if hub is not None else 0
    return position if at.isdigit() and at.isascii() and 0 < int(at) <= position else 0


def view(request: Request, template: str, status: int = 200, **ctx: Any) -> Response:
    """`template` with the base context and `ctx`: a page or a piece of one that is not kept
    live (a form and what it answered)."""
    html = ENV.get_template(template).render({**base_context(request), "index": 0, **ctx})
    return _finish(request, HTMLResponse(html, status_code=status))


def _fragment(
    request: Request, loads: Loads, key: str, index: int, fragment: Fragment, base: Context,
    args: Mapping[str, Any], extra: Mapping[str, Any], loaded: Context | None,
) -> str:  # fmt: skip
    """The fragment alone: rendered once for every tab refreshed by the same event (the same
    load, viewer and second), each given its own CSRF token."""
    token = base["csrf_token"]
    viewer = access.viewer(request)
    html = loads.rendered(key, index, viewer)
    if html is None:
        ctx = {**base, **args, **extra, **(loaded or {}), "csrf_token": loads.placeholder}
        html = str(_wrap(request, fragment, ctx))
        loads.keep_rendered(key, index, viewer, html)
    return html.replace(loads.placeholder, token)


def not_found(request: Request, base: Context | None = None) -> Response:
    ctx = base or base_context(request)
    html = ENV.get_template("notfound.html").render({**ctx, "index": 0})
    return _finish(request, HTMLResponse(html, status_code=404))


def denied(request: Request, text: str = "", *, signed_out: bool = False) -> Response:
    """403: the token may not see this (or, `signed_out`, its sign-in is no longer valid), with
    a link to sign in with another."""
    return view(request, "denied.html", 403, title="Permission denied", text=text, signed_out=signed_out)


def back_to(request: Request, prefix: str, default: str) -> str:
    """Where the form was posted from (the Referer's path and query), if it is a console page
    under `prefix`; else `default`. Never another site."""
    referer = urlsplit(request.headers.get("referer", ""))
    if referer.netloc and referer.netloc != request.headers.get("host", ""):
        return default
    if referer.path.startswith(prefix):
        return referer.path + ("?" + referer.query if referer.query else "")
    return default


async def act(
    request: Request, commands: Commands, decide: Callable[[Reads], Change], back: str, what: str
) -> Response:
    """Run one command as its /v1 route does (drover.api.commands), and go back to `back`
    saying how it went (a refusal in the command's words)."""
    try:
        await commands.run(decide)
    except CommandError as e:
        return done(request, back, e.message, "error")
    return done(request, back, what)


def done(request: Request, to: str, text: str, kind: str = "ok") -> Response:
    """Post/redirect/get: back to `to`, with `text` shown once there."""
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(
        FLASH_COOKIE,
        base64.urlsafe_b64encode(json.dumps({"kind": kind, "text": text}).encode()).decode(),
        samesite="strict",
        path="/ui",
        max_age=60,
    )
    return response
