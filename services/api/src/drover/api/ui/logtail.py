"""A task's log as the console shows it: Nomad's log frames (drover.control.client.logs.frame)
read back from the agent's byte stream, cut into lines, and filtered. Pure: the routes
(drover.api.ui.routes.logs) do the reading.

The filter runs on the server, on the lines as they stream: a noisy log then costs the browser
(and the wire) only the lines that match, and a filter applies to the tail the page opens with
as well. A regular expression is matched with a time limit per line (the `regex` module's
`timeout`): a pattern that backtracks badly ends its own stream (TooSlow) at the first line it
takes too long on, rather than taking a server's CPU line after line."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

import regex

# A line longer than this is cut (the rest dropped, the cut marked): one runaway line must not
# take the tab's memory.
MAX_LINE = 16 * 1024
CUT = " [...]"
MAX_PATTERN = 512
# Seconds one regular expression may spend on one line.
MATCH_TIMEOUT = 0.05


@dataclass
class Frames:
    """Nomad's frames (one JSON document a line) from a byte stream cut anywhere."""

    _rest: bytes = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        out = []
        for line in lines:
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict):
                out.append(doc)
        return out


def frame_data(doc: dict[str, Any]) -> tuple[bytes, int]:
    """A frame's bytes and where they start in its file (-1: no data)."""
    raw = doc.get("Data")
    if not isinstance(raw, str) or not raw:
        return b"", -1
    try:
        data = base64.b64decode(raw)
    except (binascii.Error, ValueError):
        return b"", -1
    end = doc.get("Offset")
    return data, (end - len(data)) if isinstance(end, int) else -1


@dataclass
class Lines:
    """Whole lines from bytes cut anywhere. A tail starts mid-file: with `skip_partial`, what
    comes before the first newline of data not read from its file's start is dropped (the end
    of a line whose start was not read)."""

    skip_partial: bool = False
    _rest: bytes = b""
    _started: bool = False

    def feed(self, data: bytes, start: int = 0) -> list[str]:
        if not self._started and data:
            self._started = True
            if self.skip_partial and start > 0:
                cut = data.find(b"\n")
                if cut < 0:
                    self._started = False  # still inside the first, partial line
                    return []
                data = data[cut + 1 :]
        parts = (self._rest + data).split(b"\n")
        self._rest = parts.pop()
        if len(self._rest) > MAX_LINE * 4:  # a line with no end in sight: show what there is
            parts.append(self._rest)
            self._rest = b""
        return [_text(p) for p in parts]

    def flush(self) -> list[str]:
        """The line under way, if any (the writer paused mid-line, or the stream ended)."""
        rest, self._rest = self._rest, b""
        return [_text(rest)] if rest else []


def _text(line: bytes) -> str:
    text = line.removesuffix(b"\r").decode(errors="replace")
    return text[:MAX_LINE] + CUT if len(text) > MAX_LINE else text


class TooSlow(Exception):
    """A regular expression took more than MATCH_TIMEOUT on one line."""


@dataclass(frozen=True)
class LineFilter:
    """Which lines to keep: those containing `text`, or with `is_regex` those a search for the
    regular expression `text` finds; an empty `text` keeps every line. Case matters in both."""

    text: str = ""
    is_regex: bool = False
    _pattern: Any = field(default=None, compare=False, repr=False)

    @staticmethod
    def parse(text: str, is_regex: bool) -> tuple[LineFilter | None, str]:
        """The filter, or None and why it cannot be."""
        if len(text) > MAX_PATTERN:
            return None, f"the filter is longer than {MAX_PATTERN} characters"
        if not is_regex or not text:
            return LineFilter(text, is_regex), ""
        try:
            pattern = regex.compile(text, regex.VERSION0)
        except regex.error as e:
            return None, f"not a regular expression: {e}"
        return LineFilter(text, True, pattern), ""

    def keep(self, line: str) -> bool:
        if not self.text:
            return True
        if self._pattern is None:
            return self.text in line
        try:
            return self._pattern.search(line, timeout=MATCH_TIMEOUT) is not None
        except TimeoutError:
            raise TooSlow(
                f"the regular expression {self.text!r} takes too long on the log's lines: "
                "make it simpler (no nested repetition), or filter on a substring"
            ) from None

    def __call__(self, lines: list[str]) -> list[str]:
        return [line for line in lines if self.keep(line)] if self.text else lines
