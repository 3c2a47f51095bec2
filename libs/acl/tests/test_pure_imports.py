"""drover.acl is pure: importing every module of it, parsing a policy and checking it load no
I/O library and open no file but python-hcl2's own grammar (loaded once)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hcl2

# Not `socket`: pydantic, which drover.jobspec (whose HCL reader this uses) brings, imports it
# without using it, as drover.jobspec's own probe allows.
IO_LIBRARIES = ("psycopg", "nats", "sqlalchemy", "opentelemetry", "alembic", "fastapi", "httpx")

_PROBE = """
import builtins, importlib, json, pkgutil, sys
import drover.acl
names = [m.name for m in pkgutil.walk_packages(drover.acl.__path__, "drover.acl.")]
for name in names:
    importlib.import_module(name)
opened = []
real_open = builtins.open
builtins.open = lambda *a, **k: opened.append(a[0]) or real_open(*a, **k)
acl = drover.acl.compile_acl([drover.acl.parse('namespace "web-*" { policy = "read" }')])
allowed = acl.allow_namespace_operation("web-1", "read-job")
io = sys.argv[1:]
loaded = sorted(m for m in sys.modules if m.split(".")[0] in io)
print(json.dumps({"modules": names, "io": loaded, "opened": opened, "allowed": allowed}))
"""


def test_the_acl_library_does_no_io() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, *IO_LIBRARIES], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert "drover.acl.policy" in seen["modules"] and "drover.acl.acl" in seen["modules"]
    assert seen["io"] == []
    package = str(Path(hcl2.__file__).parent)
    assert all(str(p).startswith(package) for p in seen["opened"]), seen["opened"]
    assert seen["allowed"] is True
