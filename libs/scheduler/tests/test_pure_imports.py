"""The scheduling core is pure: importing it, every module of it, loads no I/O library (no
database driver, message bus, web framework or telemetry)."""

from __future__ import annotations

import json
import subprocess
import sys

IO_LIBRARIES = ("psycopg", "nats", "sqlalchemy", "opentelemetry", "alembic", "fastapi")

# Run in a fresh interpreter: this one has whatever other tests imported.
_PROBE = """
import importlib, json, pkgutil, sys
import drover.scheduler
names = [m.name for m in pkgutil.walk_packages(drover.scheduler.__path__, "drover.scheduler.")]
for name in names:
    importlib.import_module(name)
io = sys.argv[1:]
def is_io(module):
    top = module.split(".")[0]
    return any(top == lib or top.startswith(lib + "_") for lib in io)
loaded = sorted(m for m in sys.modules if is_io(m))
print(json.dumps({"modules": names, "io": loaded}))
"""


def test_importing_the_scheduler_loads_no_io_library() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, *IO_LIBRARIES], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    # The walk reached the subpackages, not just the top level.
    assert "drover.scheduler.reconciler.cluster" in seen["modules"]
    assert "drover.scheduler.broker" in seen["modules"]
    assert seen["io"] == []
