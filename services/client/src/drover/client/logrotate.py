"""Task log rotation, as Nomad's logmon does: a stream's bytes go to `<task>.<stdout|stderr>.N`,
each file filled to exactly max_file_size bytes before the next index starts, and only the
newest max_files files kept. A new writer (a task restarted, its executor started again)
appends to the highest index there is, so indexes only grow and nothing is overwritten."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

MB = 1024 * 1024
READ_SIZE = 64 * 1024


def log_indexes(log_dir: Path, task: str, log_type: str) -> list[tuple[int, Path]]:
    """The stream's files as (index, path), lowest index first; names with no integer index
    are not the stream's."""
    pattern = re.compile(re.escape(f"{task}.{log_type}.") + r"(\d+)\Z")
    out = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(log_dir):
            m = pattern.match(entry.name)
            if m and entry.is_file():
                out.append((int(m.group(1)), Path(entry.path)))
    return sorted(out)


class FileRotator:
    """Writes one stream of a task into rotated files. Not thread-safe: one writer a stream."""

    def __init__(self, log_dir: Path, task: str, log_type: str, max_files: int, max_file_size: int) -> None:
        self.log_dir = log_dir
        self.task = task
        self.log_type = log_type
        self.max_files = max(1, max_files)
        self.max_file_size = max(1, max_file_size)
        log_dir.mkdir(parents=True, exist_ok=True)
        existing = log_indexes(log_dir, task, log_type)
        self.index = existing[-1][0] if existing else 0
        self.fd = self._open(self.index)
        self.size = os.fstat(self.fd).st_size
        if self.size >= self.max_file_size:
            self._rotate()
        self._purge()

    def _open(self, index: int) -> int:
        path = self.log_dir / f"{self.task}.{self.log_type}.{index}"
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _rotate(self) -> None:
        os.close(self.fd)
        self.index += 1
        self.fd = self._open(self.index)
        self.size = 0
        self._purge()

    def _purge(self) -> None:
        """Remove the files older than the newest max_files."""
        for index, path in log_indexes(self.log_dir, self.task, self.log_type):
            if index <= self.index - self.max_files:
                path.unlink(missing_ok=True)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.size >= self.max_file_size:
                self._rotate()
            chunk = view[: self.max_file_size - self.size]
            written = os.write(self.fd, chunk)
            self.size += written
            view = view[written:]

    def close(self) -> None:
        os.close(self.fd)


def pump(fd: int, rotator: FileRotator) -> None:
    """Copy everything read from `fd` (a task's stdout or stderr pipe) into `rotator` until the
    pipe's last writer closes it; bytes go out in the order they came in. Should the files
    refuse a write (a full disk), the pipe is still drained, so the task never blocks on it."""
    failing = False
    try:
        while data := os.read(fd, READ_SIZE):
            try:
                rotator.write(data)
                failing = False
            except OSError as e:
                if not failing:
                    print(
                        f"{rotator.task} {rotator.log_type}: output dropped: {e}", file=sys.stderr, flush=True
                    )
                failing = True
    finally:
        os.close(fd)
        rotator.close()
