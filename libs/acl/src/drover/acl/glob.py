"""Rule labels with `*` (ryanuber/go-glob, as Nomad matches them): `*` stands for any run of
characters, the empty one too; every other character is itself. A name no exact label names
takes the matching glob with the fewest characters it does not spell out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def is_glob(label: str) -> bool:
    return "*" in label


def glob_match(pattern: str, name: str) -> bool:
    """Whether `name` is one of the names `pattern` stands for."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return name == pattern
    if not name.startswith(parts[0]):
        return False
    rest = name[len(parts[0]) :]
    for part in parts[1:-1]:
        i = rest.find(part)
        if i < 0:
            return False
        rest = rest[i + len(part) :]
    return len(rest) >= len(parts[-1]) and rest.endswith(parts[-1])


def difference(pattern: str, name: str) -> int:
    """How many of `name`'s characters the glob leaves to its stars, plus a star each
    (Nomad's findAllMatchingWildcards): the lower, the closer the match."""
    return len(name) - len(pattern) + pattern.count("*")


def closest(globs: Iterable[tuple[str, T]], name: str) -> T | None:
    """The value of the glob closest to `name` among those matching it (ties: the first label
    in lexical order), None if none matches."""
    best: tuple[int, str, T] | None = None
    for pattern, value in globs:
        if glob_match(pattern, name):
            d = difference(pattern, name)
            if best is None or (d, pattern) < (best[0], best[1]):
                best = (d, pattern, value)
    return None if best is None else best[2]
