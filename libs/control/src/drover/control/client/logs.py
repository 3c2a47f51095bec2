"""Task logs as Nomad serves them (`/v1/client/fs/logs/:alloc`): the query's meaning, where a
read starts among the rotated files `<task>.<type>.N`, and the stream's frames. Pure: the
agent reads the files, the API forwards the bytes."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LOG_TYPES = ("stdout", "stderr")
ORIGINS = ("start", "end")
# findClosest's "past every index": the last file.
LAST_INDEX = 2**63 - 1
FILE_DELETED = "file deleted"

# strconv.ParseBool's spellings (python-nomad sends Python's "True"/"False").
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_bool(text: str) -> bool | None:
    """Go's strconv.ParseBool: the value, or None when `text` is not a boolean."""
    return True if text in _TRUE else False if text in _FALSE else None


@dataclass(frozen=True)
class LogsQuery:
    task: str
    log_type: str
    follow: bool = False
    offset: int = 0
    origin: str = "start"
    plain: bool = False

    def params(self) -> dict[str, str]:
        """The query as the agent takes it."""
        return {
            "task": self.task,
            "type": self.log_type,
            "follow": str(self.follow).lower(),
            "offset": str(self.offset),
            "origin": self.origin,
            "plain": str(self.plain).lower(),
        }


def parse_logs_query(params: Mapping[str, str]) -> tuple[LogsQuery | None, list[str]]:
    """The logs query from a request's parameters, or None and every problem with it."""
    problems = []
    task = params.get("task", "")
    if not task:
        problems.append("must provide task name (?task=)")
    log_type = params.get("type", "")
    if log_type not in LOG_TYPES:
        problems.append(f"type must be stdout or stderr, not {log_type!r}")
    origin = params.get("origin") or "start"
    if origin not in ORIGINS:
        problems.append(f"origin must be start or end, not {origin!r}")
    flags = {}
    for name in ("follow", "plain"):
        raw = params.get(name, "")
        value = parse_bool(raw) if raw else False
        if value is None:
            problems.append(f"{name} must be a boolean, not {raw!r}")
        flags[name] = bool(value)
    offset = 0
    raw_offset = params.get("offset", "")
    if raw_offset:
        try:
            offset = int(raw_offset)
        except ValueError:
            offset = -1
        if offset < 0:
            problems.append(f"offset must be a non-negative integer, not {raw_offset!r}")
    if problems:
        return None, problems
    return LogsQuery(task, log_type, flags["follow"], offset, origin, flags["plain"]), []


def start_point(query: LogsQuery) -> tuple[int, int]:
    """(the desired file index, the desired offset) a read starts from: from the first file
    forward, or backward from the end of the last (a negative offset)."""
    if query.origin == "end":
        return LAST_INDEX, -query.offset
    return 0, query.offset


def find_closest(
    files: Sequence[tuple[int, int]], desired_index: int, desired_offset: int
) -> tuple[int, int]:
    """Where a read starts, as Nomad's findClosest: `files` are (index, size) sorted by index;
    the answer is (position in `files`, offset in that file). The first file at or past
    `desired_index` (else the last) is the base; a positive offset walks forward over whole
    files, a negative one backward from the base's end, each stopping at the first or last
    file's edge."""
    if not files:
        raise ValueError("no log files")
    pos = next((i for i, (index, _) in enumerate(files) if index >= desired_index), len(files) - 1)
    offset = desired_offset
    while offset != 0:
        size = files[pos][1]
        if offset < 0:
            if size + offset >= 0:
                return pos, size + offset
            if pos == 0:
                return pos, 0
            offset += size
            pos -= 1
        else:
            if offset <= size:
                return pos, offset
            if pos == len(files) - 1:
                return pos, size
            offset -= size
            pos += 1
    return pos, 0


def frame(file: str = "", offset: int = 0, data: bytes = b"", event: str = "") -> bytes:
    """One of Nomad's StreamFrames as a line of JSON: Offset (where the data ends in File),
    Data (base64), File, FileEvent, each left out when empty; `{}` is the heartbeat."""
    doc: dict[str, object] = {}
    if offset:
        doc["Offset"] = offset
    if data:
        doc["Data"] = base64.b64encode(data).decode()
    if file:
        doc["File"] = file
    if event:
        doc["FileEvent"] = event
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


HEARTBEAT = frame()
