"""The data a task's templates read, as consul-template fetches it for Nomad: services and
variables from the API (`/v1/service/:name`, `/v1/services`, `/v1/var/:path`, `/v1/vars`), each
kept with the index it was read at, so that a blocking query on it (`?index=`) wakes when it
changes and the templates reading it are rendered again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import quote

import httpx

log = logging.getLogger("drover.client")
# How long one blocking query waits on the servers before it is asked again.
WAIT = "30s"

# A dependency: (kind, key), as drover.template records what a render read.
Dep = tuple[str, str]


class Missing(Exception):
    """What a template reads is not there yet (a variable not written): it waits for it."""


class TemplateSources:
    def __init__(self, http: httpx.AsyncClient, namespace: str) -> None:
        self.http = http
        self.namespace = namespace
        self.values: dict[Dep, Any] = {}  # None: read, and not there (404)
        self.index: dict[Dep, int] = {}

    def _request(self, dep: Dep) -> tuple[str, dict[str, str]]:
        kind, key = dep
        # A variable of another namespace is keyed "path@namespace".
        key, _, namespace = key.partition("@") if kind in ("var", "varlist") else (key, "", "")
        params = {"namespace": namespace or self.namespace}
        if kind == "service":
            return f"/v1/service/{quote(key, safe='')}", params
        if kind == "services":
            return "/v1/services", params
        if kind == "var":
            return f"/v1/var/{quote(key, safe='/')}", params
        if kind == "varlist":
            return "/v1/vars", {**params, "prefix": key}
        raise ValueError(f"templates cannot read {kind!r} from Nomad")

    async def fetch(self, dep: Dep, index: int = 0) -> bool:
        """Read `dep` (blocking until it changes past `index` when given); whether its value
        changed since it was last read."""
        path, params = self._request(dep)
        if index:
            params = {**params, "index": str(index), "wait": WAIT}
        timeout = httpx.Timeout(120.0 if index else 30.0, connect=5.0)
        r = await self.http.get(path, params=params, timeout=timeout)
        if r.status_code not in (200, 404):
            r.raise_for_status()
        value = r.json() if r.status_code == 200 else None
        new_index = int(r.headers.get("X-Nomad-Index", "0") or 0)
        before = self.values.get(dep, ...)
        self.values[dep] = value
        self.index[dep] = max(new_index, self.index.get(dep, 0))
        return bool(before != value)

    async def ensure(self, deps: list[Dep]) -> None:
        """Read every dependency not read yet."""
        todo = [d for d in deps if d not in self.values]
        await asyncio.gather(*(self.fetch(d) for d in todo))

    async def changed(self, deps: list[Dep], stop: asyncio.Event, timeout: float | None = None) -> set[Dep]:
        """Wait until one of `deps` changes (blocking queries on each); those that did. Empty
        when `stop` is set first, or `timeout` (s) passes."""
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        if not deps:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout)
            return set()
        watches = {asyncio.ensure_future(self._watch(d)): d for d in deps}
        stopper = asyncio.ensure_future(stop.wait())
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
                done, _ = await asyncio.wait(
                    {*watches, stopper}, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
                if stopper in done or not done:
                    return set()
                changed = {
                    watches[t] for t in done if not t.cancelled() and t.exception() is None and t.result()
                }
                if changed:
                    return changed
                for t in done:  # woken without a change (a timeout, an error): ask again
                    dep = watches.pop(t)
                    watches[asyncio.ensure_future(self._watch(dep))] = dep
        finally:
            for t in [*watches, stopper]:
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*watches, stopper, return_exceptions=True)

    async def _watch(self, dep: Dep) -> bool:
        try:
            return await self.fetch(dep, index=max(1, self.index.get(dep, 0)))
        except httpx.HTTPError as e:
            log.warning("template data %s %s: %s; asking again", dep[0], dep[1], e)
            await asyncio.sleep(1.0)
            return False
