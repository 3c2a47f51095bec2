"""Places: every message starts with the place it is about, e.g. ``Task group 'web': ...``."""

from __future__ import annotations

from collections.abc import Iterable


def at(where: str, messages: Iterable[str]) -> list[str]:
    """``messages`` placed at ``where``."""
    return [f"{where}: {m}" for m in messages]
