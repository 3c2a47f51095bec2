"""Task logs' query, where a read starts among rotated files (Nomad's findClosest), frames."""

from __future__ import annotations

import base64
import json

import pytest

from drover.control.client.logs import (
    LAST_INDEX,
    LogsQuery,
    find_closest,
    frame,
    parse_bool,
    parse_logs_query,
    start_point,
)

# Three files, indexes 3, 4, 5, of 100, 100 and 40 bytes (0..2 rotated away).
FILES = [(3, 100), (4, 100), (5, 40)]


@pytest.mark.parametrize(
    ("desired_index", "desired_offset", "expected"),
    [
        (0, 0, (0, 0)),  # the start of the first file there is
        (0, 50, (0, 50)),
        (0, 100, (0, 100)),  # a file's end is still in it
        (0, 101, (1, 1)),  # forward over whole files
        (0, 230, (2, 30)),
        (0, 240, (2, 40)),
        (0, 10_000, (2, 40)),  # past the end: the last file's end
        (4, 0, (1, 0)),
        (4, 150, (2, 40)),
        (LAST_INDEX, 0, (2, 0)),  # past every index: the last file
        (LAST_INDEX, -10, (2, 30)),  # backward from the last file's end
        (LAST_INDEX, -40, (2, 0)),
        (LAST_INDEX, -41, (1, 99)),  # across into the file before
        (LAST_INDEX, -140, (1, 0)),
        (LAST_INDEX, -150, (0, 90)),
        (LAST_INDEX, -10_000, (0, 0)),  # before the start: the first file's start
        (5, -50, (1, 90)),
    ],
)
def test_find_closest(desired_index: int, desired_offset: int, expected: tuple[int, int]) -> None:
    assert find_closest(FILES, desired_index, desired_offset) == expected


def test_find_closest_needs_a_file() -> None:
    with pytest.raises(ValueError):
        find_closest([], 0, 0)


@pytest.mark.parametrize(
    ("origin", "offset", "expected"),
    [("start", 0, (0, 0)), ("start", 7, (0, 7)), ("end", 7, (LAST_INDEX, -7))],
)
def test_start_point(origin: str, offset: int, expected: tuple[int, int]) -> None:
    assert start_point(LogsQuery("t", "stdout", offset=offset, origin=origin)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("True", True), ("1", True), ("T", True), ("false", False), ("False", False),
     ("0", False), ("yes", None), ("", None)],
)  # fmt: skip
def test_parse_bool_as_go(text: str, expected: bool | None) -> None:
    assert parse_bool(text) is expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"task": "t", "type": "stdout"}, LogsQuery("t", "stdout")),
        (
            {"task": "t", "type": "stderr", "follow": "True", "offset": "12", "origin": "end", "plain": "1"},
            LogsQuery("t", "stderr", follow=True, offset=12, origin="end", plain=True),
        ),
        ({"task": "t", "type": "stdout", "origin": "", "follow": "", "offset": ""}, LogsQuery("t", "stdout")),
    ],
)
def test_parse_logs_query(params: dict[str, str], expected: LogsQuery) -> None:
    assert parse_logs_query(params) == (expected, [])


def test_every_problem_with_a_query_at_once() -> None:
    query, problems = parse_logs_query(
        {"type": "stdin", "origin": "middle", "follow": "maybe", "plain": "x", "offset": "-1"}
    )
    assert query is None
    assert [p.split()[0] for p in problems] == ["must", "type", "origin", "follow", "plain", "offset"]


def test_query_params_round_trip() -> None:
    query = LogsQuery("t", "stderr", follow=True, offset=5, origin="end", plain=False)
    assert parse_logs_query(query.params()) == (query, [])


def test_frames_are_nomads_stream_frames() -> None:
    line = frame("alloc/logs/t.stdout.0", 6, b"hello\n")
    assert line.endswith(b"\n")
    doc = json.loads(line)
    assert doc == {
        "Offset": 6,
        "Data": base64.b64encode(b"hello\n").decode(),
        "File": "alloc/logs/t.stdout.0",
    }
    assert json.loads(frame("alloc/logs/t.stdout.0", 6, event="file deleted")) == {
        "Offset": 6,
        "File": "alloc/logs/t.stdout.0",
        "FileEvent": "file deleted",
    }
    assert frame() == b"{}\n"  # the heartbeat
