"""The domain model and the control rules are pure: importing every module of them loads no
I/O library (no database driver, message bus, web framework or telemetry)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

IO_LIBRARIES = ("psycopg", "nats", "sqlalchemy", "opentelemetry", "alembic", "fastapi", "httpx", "numpy")

# Run in a fresh interpreter: this one has whatever other tests imported.
_PROBE = """
import importlib, json, pkgutil, sys
package = importlib.import_module(sys.argv[1])
names = [m.name for m in pkgutil.walk_packages(package.__path__, sys.argv[1] + ".")]
for name in names:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[2:])
print(json.dumps({"modules": names, "io": loaded}))
"""


@pytest.mark.parametrize(
    ("package", "allowed", "reached"),
    [
        ("drover.model", (), "drover.model.validation.policies"),
        # The control rules use the scheduler's feasibility, which ranks with numpy.
        ("drover.control", ("numpy",), "drover.control.commands.deployments"),
    ],
)
def test_importing_a_pure_library_loads_no_io_library(
    package: str, allowed: tuple[str, ...], reached: str
) -> None:
    io = [lib for lib in IO_LIBRARIES if lib not in allowed]
    out = subprocess.run([sys.executable, "-c", _PROBE, package, *io], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert reached in seen["modules"]  # the walk reached the subpackages
    assert seen["io"] == []
