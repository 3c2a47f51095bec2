"""Reads and blocking queries, as Nomad's: every read answers with X-Nomad-Index (the event
log's position) and, given ?index=, waits up to ?wait= until what it reads has changed after
that index - it watches the keys of what it read (drover.runtime.watches), so a query is woken
only by the commits that change its answer. Lists page by ID (?per_page=, ?next_token=)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response

from drover.api.errors import ApiError
from drover.api.fresh import Fresh
from drover.api.views import NO_DEPLOYMENT, as_json
from drover.runtime.listen import listen
from drover.runtime.store import EventStore
from drover.runtime.store.eventstore import NOTIFY_CHANNEL
from drover.runtime.store.queries import Reads
from drover.runtime.watches import ChangeIndex, category, parse_payload

MAX_WAIT = 10 * 60.0
DEFAULT_WAIT = 5 * 60.0
# The largest index or page size a query may name (an index is a bigint in the log).
MAX_COUNT = 2**53
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)$")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_wait(value: str | None) -> float:
    if value is None or value == "":
        return DEFAULT_WAIT
    m = _DURATION.match(value.strip())
    if not m:
        raise ApiError(400, "Invalid wait time")
    return min(float(m.group(1)) * _UNITS[m.group(2)], MAX_WAIT)


def _count(value: str | None, problem: str) -> int:
    """A non-negative integer query parameter; absent or empty is 0."""
    if value is None or value == "":
        return 0
    if not value.isdigit() or not value.isascii() or int(value) > MAX_COUNT:
        raise ApiError(400, problem)
    return int(value)


def parse_index(value: str | None) -> int:
    return _count(value, "Invalid index")


def parse_per_page(value: str | None) -> int:
    return _count(value, "Invalid per_page: a non-negative integer")


def read_params(request: Request) -> tuple[int, float]:
    """A read's ?index= and ?wait=; bad query parameters (per_page too) are refused together,
    every problem listed, before the read waits."""
    problems = []
    parsed: dict[str, float] = {}
    for name, parse in (("index", parse_index), ("wait", parse_wait), ("per_page", parse_per_page)):
        try:
            parsed[name] = parse(request.query_params.get(name))
        except ApiError as e:
            problems.append(e.message)
    if problems:
        raise ApiError(400, "\n".join(problems))
    return int(parsed["index"]), parsed["wait"]


@dataclass
class Paged:
    """One page of a list read, and the ID the next page starts at ("" on the last)."""

    items: list[Any]
    next_token: str = ""


@dataclass
class EncodedPage:
    """A page whose answer is encoded already (drover.api.encoded)."""

    items: bytes
    next_token: str = ""


def paged(
    request: Request,
    fetch: Callable[[str, int], list[Any]],
    token: Callable[[Any], str] = lambda item: item.id,
) -> Callable[[], Paged]:
    """A list read paged as Nomad's are: ?per_page= items (0 or none: all) from the item whose
    token (its ID, unless `token` says otherwise) is ?next_token=, in that order; the next
    page's token goes in X-Nomad-NextToken."""

    def read() -> Paged:
        per_page = parse_per_page(request.query_params.get("per_page"))
        start = request.query_params.get("next_token", "")
        items = fetch(start, per_page + 1 if per_page else 0)
        if per_page and len(items) > per_page:
            return Paged(items[:per_page], token(items[per_page]))
        return Paged(items)

    return read


class IndexWatcher:
    """The newest log position and what changed at each, pushed by Postgres NOTIFY, for
    blocking queries: each waits on the keys of what it reads and is woken only when one of
    them changes, as Nomad's wake on the state they read."""

    def __init__(self, conninfo: str, store: EventStore) -> None:
        self.conninfo = conninfo
        self.store = store
        self.changes = ChangeIndex()
        # Set when the API stops: every blocking query is answered at once.
        self.released = False
        # Futures of the waiting queries, by the keys they wait on (a category's waiters are
        # found through their keys' prefix).
        self._waiting: dict[str, set[asyncio.Future[None]]] = {}

    async def run(self) -> None:
        self.changes.forget(await asyncio.to_thread(self.store.last_position))

        async def connected() -> None:
            # Whatever committed while no one listened may have changed anything.
            self._forget(await asyncio.to_thread(self.store.last_position))

        await listen(
            self.conninfo, NOTIFY_CHANNEL, lambda p: self.note(*parse_payload(p)), on_connect=connected
        )

    def note(self, position: int, keys: list[str], categories: list[str]) -> None:
        """A commit at `position` changed `keys` (and every key of `categories`)."""
        self.changes.note(position, keys, categories)
        for k in keys:
            self._wake(self._waiting.get(k, ()))
        for c in categories:
            for k, futures in list(self._waiting.items()):
                if c == "*" or category(k) == c:
                    self._wake(futures)

    def _forget(self, position: int) -> None:
        self.changes.forget(position)
        self._wake_all()

    def _wake_all(self) -> None:
        for futures in list(self._waiting.values()):
            self._wake(futures)

    @staticmethod
    def _wake(futures: Iterable[asyncio.Future[None]]) -> None:
        for f in list(futures):
            if not f.done():
                f.set_result(None)

    def release(self) -> None:
        """Answer every blocking query now, and any that comes after at once: the API is
        stopping, and each would hold its stop for up to its ?wait (5 minutes at most)."""
        self.released = True
        self._wake_all()

    async def wait_changed(self, keys: list[str], index: int, timeout: float) -> None:
        """Until one of `keys` changed after `index`, `timeout` seconds passed, or the API
        stops."""
        deadline = time.monotonic() + timeout
        while not self.released and not self.changes.changed_after(keys, index):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            for k in keys:
                self._waiting.setdefault(k, set()).add(fut)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, left)
            finally:
                for k in keys:
                    waiting = self._waiting.get(k)
                    if waiting is not None:
                        waiting.discard(fut)
                        if not waiting:
                            del self._waiting[k]


class Blocking:
    """Runs reads as blocking queries and answers them with Nomad's headers."""

    def __init__(self, reads: Reads, watcher: IndexWatcher, fresh: Fresh) -> None:
        self.reads = reads
        self.watcher = watcher
        self.fresh = fresh

    async def read(self, request: Request, fn: Callable[[], Any], keys: list[str]) -> Response:
        """Run `fn` (in a thread), after waiting until one of `keys` - what it shows - changed
        after ?index, or ?wait passed. None from `fn` is a 404."""

        def read() -> tuple[int, Any]:
            # The index first: what the answer shows is at least as new as the index it carries.
            with self.reads.held():
                return self.reads.index(), fn()

        return await self.read_at(request, read, keys)

    async def read_at(
        self, request: Request, read: Callable[[], tuple[int, Any]], keys: list[str]
    ) -> Response:
        """`read` for a read that gives the index with its result (bytes: the answer's body,
        encoded already)."""
        index, wait = read_params(request)
        if index:
            await self.watcher.wait_changed(keys, index, wait)
        return _answer(*await asyncio.to_thread(read))

    async def read_kept(self, request: Request, key: str, read: Callable[[], tuple[int, Any]]) -> Response:
        """`read_at` for an object under one watch key whose answer (its index read in the
        same statement) is kept and served while current (drover.api.fresh)."""
        index, wait = read_params(request)
        if index:
            await self.watcher.wait_changed([key], index, wait)
        fresh = self.fresh
        if fresh.hopeful(READ, [key]) and (now := await fresh.index()) is not None:
            kept = fresh.get(READ, key, now)
            if kept is not None:
                return _answer(now, kept.value)
        current, result = await asyncio.to_thread(read)
        fresh.keep(READ, key, current, result)
        return _answer(current, result)


# What a read's answer is kept as in Fresh (a heartbeat keeps its nodes' statuses beside them).
READ = "read"


def _answer(current: int, result: Any) -> Response:
    if result is None:
        raise ApiError(404, "not found")
    headers = {"X-Nomad-Index": str(current), "X-Nomad-KnownLeader": "true", "X-Nomad-LastContact": "0"}
    if isinstance(result, Paged | EncodedPage):
        if result.next_token:
            headers["X-Nomad-NextToken"] = result.next_token
        result = result.items
    if isinstance(result, bytes):  # encoded already (drover.api.encoded)
        return Response(content=result, media_type="application/json", headers=headers)
    return Response(
        content=json.dumps(None if result is NO_DEPLOYMENT else as_json(result)),
        media_type="application/json",
        headers=headers,
    )
