"""drover.filter is pure: importing every module of it, parsing a filter and evaluating it
load no I/O library and open no file."""

from __future__ import annotations

import json
import subprocess
import sys

IO_LIBRARIES = ("psycopg", "nats", "sqlalchemy", "opentelemetry", "alembic", "fastapi", "httpx", "socket")

_PROBE = """
import builtins, importlib, json, pkgutil, sys
import drover.filter
names = [m.name for m in pkgutil.walk_packages(drover.filter.__path__, "drover.filter.")]
for name in names:
    importlib.import_module(name)
opened = []
real_open = builtins.open
builtins.open = lambda *a, **k: opened.append(a[0]) or real_open(*a, **k)
kept = drover.filter.Filter.parse('Name matches "^w" and "a" in Tags').keep([{"Name": "web", "Tags": ["a"]}])
io = sys.argv[1:]
loaded = sorted(m for m in sys.modules if m.split(".")[0] in io)
print(json.dumps({"modules": names, "io": loaded, "opened": opened, "kept": len(kept)}))
"""


def test_the_filter_library_does_no_io() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, *IO_LIBRARIES], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert "drover.filter.parser" in seen["modules"] and "drover.filter.evaluate" in seen["modules"]
    assert seen["io"] == [] and seen["opened"] == []
    assert seen["kept"] == 1
