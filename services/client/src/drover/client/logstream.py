"""Reading a task's rotated log files as Nomad's client streams them: from where the query
says (drover.control.client.logs.find_closest), file after file, and with follow on, new bytes as
they are written and new files as rotation opens them."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from drover.client.logrotate import READ_SIZE, log_indexes
from drover.control.client.logs import FILE_DELETED, LogsQuery, find_closest, start_point

POLL = 0.1  # how often a follower looks for new bytes
HEARTBEAT_EVERY = 1.0  # Nomad's stream heartbeat rate
LOG_DIR = "alloc/logs"  # the frames' File is relative to the alloc directory, as Nomad's


@dataclass(frozen=True)
class Chunk:
    """Bytes read (`data`, ending at `offset` in `file`), a file event, or (all empty) a
    heartbeat."""

    file: str = ""
    offset: int = 0
    data: bytes = b""
    event: str = ""


def listing(log_dir: Path, query: LogsQuery) -> list[tuple[int, Path, int]]:
    """The stream's files as (index, path, size); a file removed meanwhile is left out."""
    out = []
    for index, path in log_indexes(log_dir, query.task, query.log_type):
        try:
            out.append((index, path, path.stat().st_size))
        except FileNotFoundError:
            continue
    return out


async def stream(log_dir: Path, query: LogsQuery) -> AsyncIterator[Chunk]:
    """The chunks a query reads. Without follow it ends at the end of the last file there was
    when it started; with follow it goes on until the files are removed (the alloc collected)."""
    next_index, offset = start_point(query)
    last_index: int | None = None
    while True:
        files = listing(log_dir, query)
        if not files:
            return
        if not query.follow and last_index is None:
            last_index = files[-1][0]
        pos, start = find_closest([(i, size) for i, _, size in files], next_index, offset)
        index, path, _ = files[pos]
        if last_index is not None and index > last_index:
            return
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below, held across awaits
        except FileNotFoundError:
            continue  # rotated away meanwhile: list again
        with f:
            f.seek(start)
            final = last_index is not None and index == last_index
            async for chunk in _read_file(f, log_dir, query, index, start, final):
                yield chunk
                if chunk.event:
                    return
        if final:
            return
        next_index, offset = index + 1, 0


async def _read_file(
    f: BinaryIO, log_dir: Path, query: LogsQuery, index: int, offset: int, final: bool
) -> AsyncIterator[Chunk]:
    """One file's bytes from `offset`: to its end when it is not followed; when it is, until a
    later file exists (then to its end: it is complete) or the file is removed."""
    name = f"{LOG_DIR}/{query.task}.{query.log_type}.{index}"
    idle_since = time.monotonic()
    while True:
        data = f.read(READ_SIZE)
        if data:
            offset += len(data)
            yield Chunk(name, offset, data)
            idle_since = time.monotonic()
            continue
        if final or not query.follow:
            return
        if any(i > index for i, _ in log_indexes(log_dir, query.task, query.log_type)):
            # The writer moved on: this file is whole; what was written before the move is
            # read by the next pass of the loop (nothing is dropped at a rotation).
            while data := f.read(READ_SIZE):
                offset += len(data)
                yield Chunk(name, offset, data)
            return
        if os.fstat(f.fileno()).st_nlink == 0:
            yield Chunk(name, offset, event=FILE_DELETED)
            return
        if time.monotonic() - idle_since >= HEARTBEAT_EVERY:
            yield Chunk()
            idle_since = time.monotonic()
        await asyncio.sleep(POLL)
