"""drover.jobspec is pure: importing every module of it loads no I/O library, and parsing
touches no file (but python-hcl2's own grammar, loaded once) and no environment but what the
caller hands in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

IO_LIBRARIES = ("psycopg", "nats", "sqlalchemy", "opentelemetry", "alembic", "fastapi", "httpx")

_PROBE = """
import builtins, importlib, json, os, pkgutil, sys
import drover.jobspec
names = [m.name for m in pkgutil.walk_packages(drover.jobspec.__path__, "drover.jobspec.")]
for name in names:
    importlib.import_module(name)
opened = []
real_open = builtins.open
builtins.open = lambda *a, **k: opened.append(a[0]) or real_open(*a, **k)
os.environ["NOMAD_VAR_image"] = "from-the-process"
job = drover.jobspec.parse(
    'variable "image" { default = "a" }\\njob "j" { group "g" { task "t" {\\n'
    '  driver = "docker"\\n  config { image = var.image }\\n} } }\\n'
)
io = sys.argv[1:]
loaded = sorted(m for m in sys.modules if m.split(".")[0] in io)
print(json.dumps({"modules": names, "io": loaded, "opened": opened, "job": job}))
"""


def test_the_jobspec_library_does_no_io() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, *IO_LIBRARIES], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert "drover.jobspec.evaluate" in seen["modules"]
    assert seen["io"] == []
    import hcl2

    package = str(Path(hcl2.__file__).parent)
    assert all(str(p).startswith(package) for p in seen["opened"]), seen["opened"]
    # The process' environment is not read: only the env handed to parse counts.
    assert seen["job"]["TaskGroups"][0]["Tasks"][0]["Config"] == {"image": "a"}
