"""The parts of a read query the projections' readers share: a LIKE prefix taken literally, and
keyset paging on ID."""

from __future__ import annotations

from typing import Any


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching `prefix` literally at the start."""
    return prefix.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"


def page_on_id(where: list[str], params: dict[str, Any], start: str, limit: int) -> str:
    """Keyset paging on ID: rows from ID `start` on, at most `limit` (0: all)."""
    if start:
        where.append("id >= :start")
        params["start"] = start
    if limit:
        params["limit"] = limit
        return " LIMIT :limit"
    return ""
