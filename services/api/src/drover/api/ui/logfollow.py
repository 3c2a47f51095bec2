"""Reading task logs for the console: from the agent holding the alloc, through the same
forwarding as /v1/client/fs/logs (drover.api.forward), as batches of lines; and one merged tail
over every running alloc of a job, which follows allocs as they start. The pages' streams are
server-sent events (`start`, `lines`, `notice`, `problem`, `end`), read by static/logs.js."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from drover.api.errors import ApiError
from drover.api.forward import ClientForwarder
from drover.api.ui.logtail import Frames, LineFilter, Lines, TooSlow, frame_data
from drover.control.client.logs import LogsQuery
from drover.model.alloc import Allocation
from drover.runtime.store.queries import Reads

# Seconds between comments that keep an idle stream open through proxies.
PING = 15.0
# How often a job's merged tail looks for allocs that started.
RESCAN = 2.0
# Allocs (tasks) one merged tail follows at once: each holds a connection to its agent.
MAX_FOLLOWED = 32
# Lines one `lines` event carries at most (a burst is sent in several).
BATCH = 500


def sse(event: str, data: Any = "") -> bytes:
    """One server-sent event; the data as JSON (a log line may hold a carriage return, which
    would end an event's field)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class Source:
    """A task's log stream in one alloc, and how a merged tail names it."""

    alloc_id: str
    task: str
    label: str = ""


async def read(
    forwarder: ClientForwarder, reads: Reads, source: Source, log_type: str, follow: bool, tail: int
) -> AsyncGenerator[list[str]]:
    """The log's last `tail` bytes (from the start of its first whole line), then with `follow`
    the lines as they are written. An agent's refusal is raised (ApiError) before the first
    batch; an empty batch is the agent's heartbeat (nothing written for a second)."""
    address = await forwarder.node_address(reads, source.alloc_id)
    query = LogsQuery(source.task, log_type, follow=follow, offset=tail, origin="end")
    body = await forwarder.stream(address, f"/v1/client/fs/logs/{source.alloc_id}", query.params(), follow)
    return _lines(body)


async def _lines(body: AsyncIterator[bytes]) -> AsyncGenerator[list[str]]:
    frames, lines = Frames(), Lines(skip_partial=True)
    try:
        async for chunk in body:
            batch: list[str] = []
            for doc in frames.feed(chunk):
                data, start = frame_data(doc)
                if data:
                    batch += lines.feed(data, start)
                elif not doc:  # the heartbeat: the writer is idle, show a line it left unfinished
                    batch += lines.flush()
            yield batch
        if rest := lines.flush():
            yield rest
    finally:
        aclose = getattr(body, "aclose", None)
        if aclose is not None:  # the agent's connection goes back now, not when collected
            await aclose()


async def alloc_stream(
    forwarder: ClientForwarder, reads: Reads, source: Source, log_type: str, follow: bool, tail: int,
    keep: LineFilter,
) -> AsyncIterator[bytes]:  # fmt: skip
    """One task's log as events: `start` once the agent answered, then `lines` (lists of
    strings), and `end` when the log ends (not followed, or removed); `problem` (its text) when
    the agent refuses or cannot be reached."""
    try:
        batches = await read(forwarder, reads, source, log_type, follow, tail)
    except ApiError as e:
        yield sse("problem", e.message)
        return
    yield sse("start")
    pinged = time.monotonic()
    async with contextlib.aclosing(batches):  # the agent's connection closed as the page goes
        async for batch in batches:
            try:
                kept = keep(batch)
            except TooSlow as e:
                yield sse("problem", str(e))
                return
            for i in range(0, len(kept), BATCH):
                yield sse("lines", kept[i : i + BATCH])
                pinged = time.monotonic()
            if time.monotonic() - pinged >= PING:
                yield b": ping\n\n"
                pinged = time.monotonic()
    yield sse("end")


def alloc_tasks(alloc: Allocation, task: str) -> list[str]:
    """The tasks of `alloc` a merged tail follows: `task` if the alloc has it, else all."""
    names = sorted(alloc.task_states)
    return ([task] if task in names else []) if task else names


def followable(alloc: Allocation, group: str) -> bool:
    return (
        alloc.client_status == "running" and alloc.desired_status == "run" and group in ("", alloc.task_group)
    )


def running(reads: Reads, namespace: str, job_id: str) -> list[Allocation]:
    """The job's running allocs, oldest first (a job's past allocs are not read)."""
    found = reads.alloc_page(namespace=namespace, job_id=job_id, status="running", limit=MAX_FOLLOWED * 4)
    return sorted(found.items, key=lambda a: a.create_time)


class Merged:
    """A job's merged tail: a follower per running alloc's task, each putting its lines,
    labelled, on one queue, in the order they arrive; a scan every RESCAN seconds starts
    followers for allocs that started since."""

    def __init__(
        self, forwarder: ClientForwarder, reads: Reads, namespace: str, job_id: str, group: str, task: str,
        log_type: str, tail: int, keep: LineFilter,
    ) -> None:  # fmt: skip
        self.forwarder, self.reads = forwarder, reads
        self.namespace, self.job_id, self.group, self.task = namespace, job_id, group, task
        self.log_type, self.tail, self.keep = log_type, tail, keep
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=64)
        self.followers: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.capped = False

    async def _follow(self, source: Source) -> None:
        try:
            batches = await read(self.forwarder, self.reads, source, self.log_type, True, self.tail)
        except ApiError as e:
            await self.queue.put(sse("notice", {"label": source.label, "text": e.message}))
            return
        await self.queue.put(sse("notice", {"label": source.label, "text": "following"}))
        async with contextlib.aclosing(batches):
            async for batch in batches:
                try:
                    kept = self.keep(batch)
                except TooSlow as e:
                    await self.queue.put(sse("problem", str(e)))
                    return
                for i in range(0, len(kept), BATCH):
                    await self.queue.put(sse("lines", [[source.label, line] for line in kept[i : i + BATCH]]))
        await self.queue.put(sse("notice", {"label": source.label, "text": "log ended"}))

    async def scan(self) -> None:
        """Start a follower for every running alloc's task not followed yet, up to the cap."""
        allocs = await asyncio.to_thread(running, self.reads, self.namespace, self.job_id)
        for alloc in allocs:
            if not followable(alloc, self.group):
                continue
            tasks = alloc_tasks(alloc, self.task)
            for task in tasks:
                key = (alloc.id, task)
                if key in self.followers:
                    continue
                if len(self.followers) >= MAX_FOLLOWED:
                    if not self.capped:
                        self.capped = True
                        text = f"following the first {MAX_FOLLOWED} tasks only; choose a group or task"
                        await self.queue.put(sse("notice", {"label": "", "text": text}))
                    return
                label = alloc.id[:8] + (f" {task}" if len(tasks) > 1 else "")
                source = Source(alloc.id, task, label)
                self.followers[key] = asyncio.create_task(self._follow(source))

    async def _scanner(self) -> None:
        while True:
            await self.scan()
            await asyncio.sleep(RESCAN)

    async def events(self) -> AsyncIterator[bytes]:
        yield sse("start")
        scanner = asyncio.create_task(self._scanner())
        try:
            while True:
                try:
                    event = await asyncio.wait_for(self.queue.get(), PING)
                except TimeoutError:
                    event = b": ping\n\n"
                yield event
                if event.startswith(b"event: problem"):  # a filter too slow: this tail ends
                    return
                if scanner.done() and scanner.exception() is not None:
                    yield sse("problem", f"cannot list the job's allocations: {scanner.exception()}")
                    return
        finally:
            tasks = [scanner, *self.followers.values()]
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks)  # each closes its agent connection
