"""`drover alloc logs`' own parts: Nomad's frames however the stream splits them, and the
last N lines read back from the end as far as needed."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from drover.cli import logs


def test_frames_are_read_however_the_stream_splits_them() -> None:
    docs = [
        {"Offset": i, "Data": base64.b64encode(b"x" * i).decode(), "File": "alloc/logs/t.stdout.0"}
        for i in range(1, 40)
    ]
    text = "\n".join(json.dumps(d) for d in docs[:20]) + "".join(
        json.dumps(d) for d in docs[20:]
    )  # Go's: no separator
    raw = text.encode()
    for size in (1, 7, 64, len(raw)):
        chunks = (raw[i : i + size] for i in range(0, len(raw), size))
        assert list(logs._frames(chunks)) == docs


class Stored(logs.LogReader):
    """A reader whose API holds `data` as the task's log (origin=end reads its tail)."""

    def __init__(self, data: bytes) -> None:
        super().__init__("http://127.0.0.1:1", "default")
        self.data = data
        self.asked: list[int] = []

    def read(
        self, alloc_id: str, task: str, log_type: str, follow: bool, origin: str = "start", offset: int = 0
    ) -> Iterator[bytes]:
        assert origin == "end" and not follow
        self.asked.append(offset)
        yield self.data[-offset:] if offset else b""


LINES = b"".join(b"%d\n" % i for i in range(1000))


@pytest.mark.parametrize(
    ("data", "n", "expected"),
    [
        (LINES, 3, b"997\n998\n999\n"),
        (LINES, 0, b""),
        (LINES, 2000, LINES),  # fewer lines than asked: all of them
        (b"a\nb\nc", 2, b"b\nc"),  # a last line with no newline counts
        (b"", 5, b""),
        (b"x" * 500 + b"\n" + b"y" * 700 + b"\n", 1, b"y" * 700 + b"\n"),  # long lines: read further back
    ],
)
def test_last_lines(data: bytes, n: int, expected: bytes) -> None:
    reader = Stored(data)
    assert reader.last_lines("a", "t", "stdout", n) == expected
    reader.close()
