"""Task logs on the agent: the rotating writer (Nomad's logmon) and the reader that streams
the rotated files, each against real files."""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from pathlib import Path

import pytest

from drover.client.logrotate import FileRotator, log_indexes, pump
from drover.client.logstream import Chunk, stream
from drover.control.client.logs import FILE_DELETED, LogsQuery


def files(log_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for _, p in log_indexes(log_dir, "t", "stdout")}


@pytest.mark.parametrize("pieces", [[25], [10, 10, 5], [3] * 8 + [1], [1] * 25, [9, 2, 14]])
def test_the_rotator_fills_each_file_to_the_size_and_keeps_max_files(
    tmp_path: Path, pieces: list[int]
) -> None:
    data = bytes(random.Random(1).randbytes(sum(pieces)))
    rot = FileRotator(tmp_path, "t", "stdout", max_files=2, max_file_size=10)
    at = 0
    for n in pieces:
        rot.write(data[at : at + n])
        at += n
    rot.close()
    # 25 bytes: files 0 and 1 full, 2 half; 0 purged.
    assert files(tmp_path) == {"t.stdout.1": data[10:20], "t.stdout.2": data[20:25]}


def test_a_new_writer_appends_to_the_last_file_and_moves_on_when_it_is_full(tmp_path: Path) -> None:
    rot = FileRotator(tmp_path, "t", "stdout", max_files=5, max_file_size=10)
    rot.write(b"abcdefg")
    rot.close()
    rot = FileRotator(tmp_path, "t", "stdout", max_files=5, max_file_size=10)  # a task restarted
    rot.write(b"hijkl")
    rot.close()
    assert files(tmp_path) == {"t.stdout.0": b"abcdefghij", "t.stdout.1": b"kl"}
    rot = FileRotator(tmp_path, "t", "stdout", max_files=1, max_file_size=2)  # full: the next index
    rot.write(b"m")
    rot.close()
    assert files(tmp_path) == {"t.stdout.2": b"m"}


def test_pump_copies_a_pipe_in_order(tmp_path: Path) -> None:
    r, w = os.pipe()
    rot = FileRotator(tmp_path, "t", "stdout", max_files=100, max_file_size=1000)
    t = threading.Thread(target=pump, args=(r, rot))
    t.start()
    lines = b"".join(f"line {i}\n".encode() for i in range(2000))
    os.write(w, lines)
    os.close(w)
    t.join(5)
    assert b"".join(files(tmp_path)[f"t.stdout.{i}"] for i in range(len(files(tmp_path)))) == lines


async def collect(log_dir: Path, query: LogsQuery, until: int, timeout: float = 10) -> list[Chunk]:
    out: list[Chunk] = []
    got = 0

    async def run() -> None:
        nonlocal got
        async for chunk in stream(log_dir, query):
            out.append(chunk)
            got += len(chunk.data)
            if got >= until or chunk.event:
                return

    await asyncio.wait_for(run(), timeout)
    return out


async def test_a_read_spans_the_files_and_ends_at_the_end(tmp_path: Path) -> None:
    rot = FileRotator(tmp_path, "t", "stdout", max_files=3, max_file_size=10)
    rot.write(bytes(range(45)))  # files 2, 3, 4 kept: bytes 20..44
    rot.close()
    chunks = await collect(tmp_path, LogsQuery("t", "stdout"), 10_000)
    assert b"".join(c.data for c in chunks) == bytes(range(20, 45))
    assert [(c.file, c.offset) for c in chunks] == [
        ("alloc/logs/t.stdout.2", 10),
        ("alloc/logs/t.stdout.3", 10),
        ("alloc/logs/t.stdout.4", 5),
    ]
    tail = await collect(tmp_path, LogsQuery("t", "stdout", offset=12, origin="end"), 10_000)
    assert b"".join(c.data for c in tail) == bytes(range(33, 45))


async def test_following_crosses_rotations_while_the_writer_writes(tmp_path: Path) -> None:
    data = random.Random(2).randbytes(50_000)
    rot = FileRotator(tmp_path, "t", "stdout", max_files=1000, max_file_size=3_000)
    rot.write(data[:100])

    def write() -> None:
        for at in range(100, len(data), 700):
            rot.write(data[at : at + 700])
            time.sleep(0.002)

    writer = threading.Thread(target=write)
    writer.start()
    chunks = await collect(tmp_path, LogsQuery("t", "stdout", follow=True), len(data))
    writer.join()
    rot.close()
    assert b"".join(c.data for c in chunks) == data


async def test_a_follower_is_told_when_the_files_are_removed(tmp_path: Path) -> None:
    rot = FileRotator(tmp_path, "t", "stdout", max_files=3, max_file_size=10)
    rot.write(b"abc")
    rot.close()

    async def remove() -> None:
        await asyncio.sleep(0.3)
        (tmp_path / "t.stdout.0").unlink()

    remover = asyncio.create_task(remove())
    chunks = await collect(tmp_path, LogsQuery("t", "stdout", follow=True), 10_000)
    await remover
    assert chunks[0].data == b"abc" and chunks[-1].event == FILE_DELETED


async def test_bytes_written_just_before_a_rotation_are_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a follower must win: it reads to the end of a file, then the writer fills the
    file and opens the next before the follower looks for a next file."""
    import drover.client.logstream as logstream

    rot = FileRotator(tmp_path, "t", "stdout", max_files=10, max_file_size=10)
    rot.write(b"01234")
    looks = 0

    def listing_after_a_write(log_dir: Path, task: str, log_type: str) -> list[tuple[int, Path]]:
        nonlocal looks
        looks += 1
        if looks == 2:  # (1: the listing to start from) the follower is at the end of file 0
            rot.write(b"56789abc")
        return log_indexes(log_dir, task, log_type)

    monkeypatch.setattr(logstream, "log_indexes", listing_after_a_write)
    chunks = await collect(tmp_path, LogsQuery("t", "stdout", follow=True), 13)
    rot.close()
    assert b"".join(c.data for c in chunks) == b"0123456789abc"
