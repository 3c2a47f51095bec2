"""The agent's files in its data directory, written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file renamed over it: a reader, or the agent
    after a crash, sees the old content or the new, never an empty or partial file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data)
    os.replace(tmp, path)
