"""Durations in Go's form, as Nomad's job and driver configs write them."""

from __future__ import annotations

import pytest

from drover.model.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("10s", 10_000_000_000),
        ("500ms", 500_000_000),
        ("1m30s", 90_000_000_000),
        ("1.5h", 5_400_000_000_000),
        ("0", 0),
        (250, 250),
        ("2us", 2000),
    ],
)
def test_parse_duration(text: object, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize("bad", ["", "10", "ten seconds", "5x", True, None, 1.5])
def test_parse_duration_refuses(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)
