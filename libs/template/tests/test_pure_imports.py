"""drover.template is pure: importing every module of it loads no I/O library, and a render
opens no file and reads no environment but what the caller hands in."""

from __future__ import annotations

import json
import subprocess
import sys

IO_LIBRARIES = ("psycopg", "nats", "sqlalchemy", "opentelemetry", "alembic", "fastapi", "httpx", "socket")

_PROBE = """
import builtins, importlib, json, os, pkgutil, sys
import drover.template
names = [m.name for m in pkgutil.walk_packages(drover.template.__path__, "drover.template.")]
for name in names:
    importlib.import_module(name)
opened = []
real_open = builtins.open
builtins.open = lambda *a, **k: opened.append(a[0]) or real_open(*a, **k)
os.environ["FROM_PROCESS"] = "leaked"
out = drover.template.render('{{ env "FROM_PROCESS" }}|{{ file "/etc/hostname" }}|{{ timestamp }}')
io = sys.argv[1:]
loaded = sorted(m for m in sys.modules if m.split(".")[0] in io)
print(json.dumps({"modules": names, "io": loaded, "opened": opened, "text": out.text}))
"""


def test_the_template_library_does_no_io() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, *IO_LIBRARIES], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert "drover.template.evaluator" in seen["modules"]
    assert seen["io"] == []
    assert seen["opened"] == []
    # Neither the process' environment, nor its files, nor its clock: only what the Call holds.
    assert seen["text"] == "||1970-01-01T00:00:00Z"
