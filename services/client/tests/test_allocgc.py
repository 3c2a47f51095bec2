"""The agent's collection of alloc directories (drover.client.allocgc), and its settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from drover.client.allocgc import to_collect
from drover.client.config import load
from drover.client.service import parse
from drover.model.durations import MINUTE, SECOND

# (what, kept here, the servers' listing (ID: client status terminal there), when each ended
# here, gc_max_allocs, what goes)
CASES = [
    ("nothing heard from the servers yet", ["a", "b"], None, {"a": 1.0}, 0, []),
    ("forgotten by the servers: at once, live or not", ["a", "b", "c"], {"b": False}, {"a": 1.0}, 50, ["a", "c"]),
    ("under the limit", ["a", "b"], {"a": True, "b": True}, {"a": 1.0, "b": 2.0}, 2, []),
    ("over it: the longest terminal first", ["a", "b", "c"], {"a": True, "b": True, "c": True},
     {"a": 3.0, "b": 1.0, "c": 2.0}, 1, ["b", "c"]),
    ("live allocs never go for the count", ["a", "b", "c"], {"a": False, "b": True, "c": False},
     {"b": 1.0}, 1, ["b"]),
    ("ended here, but the servers have not heard: kept", ["a", "b"], {"a": False, "b": False},
     {"a": 1.0, "b": 2.0}, 0, []),
    ("forgotten ones count first", ["a", "b", "c"], {"b": True, "c": True}, {"b": 1.0, "c": 2.0}, 1, ["a", "b"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kept", "listed", "ended", "max_allocs", "gone"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_which_alloc_directories_go(
    kept: list[str], listed: dict[str, bool] | None, ended: dict[str, float], max_allocs: int, gone: list[str]
) -> None:
    assert to_collect(kept, listed, ended, max_allocs) == gone


def test_gc_settings_in_the_config_file_and_flags(tmp_path: Path) -> None:
    f = tmp_path / "agent.hcl"
    f.write_text('client {\n  gc_interval = "30s"\n  gc_max_allocs = 7\n}\n')
    cfg = load(f)
    assert (cfg.gc_interval, cfg.gc_max_allocs) == (30 * SECOND, 7)
    assert (parse([]).gc_interval, parse([]).gc_max_allocs) == (MINUTE, 50)
    cfg = parse(["--config", str(f), "--gc-interval", "2s", "--gc-max-allocs", "3"])
    assert (cfg.gc_interval, cfg.gc_max_allocs) == (2 * SECOND, 3)
    f.write_text('client {\n  gc_interval = "soon"\n  gc_max_allocs = 0\n}\n')
    with pytest.raises(ValueError, match=r"client.gc_interval: .*client.gc_max_allocs: must be a positive"):
        load(f)
    with pytest.raises(SystemExit):
        parse(["--gc-max-allocs", "0"])
