"""Service processes for the tests, forked from a template process that has imported them.

Each of a test cluster's processes imports the same second of modules (SQLAlchemy, pydantic
models, nats-py, numpy, FastAPI); with ninety clusters in the suite that was most of its CPU.
The template (this file run as a script, one per pytest process) imports every service's
module once and then forks a child per request, which runs `python -m <module> <args>` as a
fresh interpreter would: its own environment, argv, working directory and log, stdin from
/dev/null, nothing running before it but imports (the template checks it holds no thread and no
logging handler). Settings are read from the environment when a service starts, never at
import, so a child sees its own. `drover up` and its test still exec each service afresh.
`run_drover` runs the CLI the same way, each run a child calling its entry point.

`DROVER_TEST_SPAWN=exec` makes `spawn` and `run_drover` exec every process instead, as before
the template."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

# What the template imports: each service's module, the agent's included.
MODULES = (
    "drover.relay.service",
    "drover.broker.service",
    "drover.planner.service",
    "drover.worker.service",
    "drover.leader.service",
    "drover.gc.service",
    "drover.api.server",
    "drover.client.service",
    "drover.cli.main",
)


class Forked:
    """A child of the template, driven like a `subprocess.Popen`. It is signalled through a
    pidfd opened at once, so a pid reused after the child ended is never signalled; its exit
    status is the one the template wrote when it reaped it."""

    def __init__(self, pid: int, status: Path, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self._status = status
        self._fd: int | None = None
        # Gone already (it ended at once and was reaped): its status file says how.
        with contextlib.suppress(ProcessLookupError):
            self._fd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(FileNotFoundError, ValueError):
                self.returncode = int(self._status.read_text())
                self._close()
        return self.returncode

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self._close()

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.01)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None and self._fd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._fd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Template:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.lock = threading.Lock()
        assert self._reply() == {"ready": True}

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the service template exited ({self.proc.wait()})")
        return json.loads(line)  # type: ignore[no-any-return]

    def fork(
        self,
        module: str,
        args: list[str],
        env: dict[str, str],
        log: Path,
        *,
        err: Path | None = None,
        stdin: Path | None = None,
        call: str = "",
    ) -> Forked:
        status = log.with_name(f"{log.name}.{time.monotonic_ns()}.status")
        log.touch()  # there on return, as a Popen's log is
        request = {
            "module": module,
            "call": call,
            "args": args,
            "env": env,
            "cwd": os.getcwd(),
            "log": str(log),
            "err": str(err or log),
            "stdin": str(stdin or os.devnull),
            "status": str(status),
        }
        with self.lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            reply = self._reply()
        return Forked(reply["pid"], status, [module, *args])


_template: _Template | None = None

Process = Forked | subprocess.Popen[bytes]


def _the_template() -> _Template:
    global _template
    if _template is None or _template.proc.poll() is not None:
        _template = _Template()
    return _template


def spawn(module: str, args: list[str], env: dict[str, str], log: Path) -> Process:
    """`python -m module *args` with `env`, its stdout and stderr appended to `log`."""
    if os.environ.get("DROVER_TEST_SPAWN") == "exec":
        with open(log, "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", module, *args], env=env, stdout=out, stderr=subprocess.STDOUT
            )
    return _the_template().fork(module, args, env, log)


DROVER = str(Path(sys.executable).parent / "drover")


def run_drover(
    args: list[str], env: dict[str, str], timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`drover *args` as `subprocess.run(capture_output=True, text=True)` runs it: the CLI's
    entry point (`drover.cli.main:main`, what the `drover` script calls) in a child of the
    template, its output not a terminal. A CLI run costs the tests 0.05 s of CPU, not the
    0.6-1.5 s of an interpreter importing it afresh (the suite runs the CLI a few hundred times)."""
    if os.environ.get("DROVER_TEST_SPAWN") == "exec":
        return subprocess.run(
            [DROVER, *args], env=env, input=stdin, capture_output=True, text=True, timeout=timeout
        )
    with tempfile.TemporaryDirectory(prefix="drover-cli-") as d:
        out, err, given = Path(d) / "stdout", Path(d) / "stderr", Path(d) / "stdin"
        given.write_text(stdin or "")
        proc = _the_template().fork(
            "drover", args, env, out, err=err, stdin=given, call="drover.cli.main:main"
        )
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        return subprocess.CompletedProcess([DROVER, *args], code, out.read_text(), err.read_text())


# --- the template process ---


def _serve() -> dict[str, Any] | None:
    """Fork a child per request until stdin closes. In a child, returns its request."""
    import importlib

    for name in MODULES:
        importlib.import_module(name)
    import logging

    # Nothing may run in the template but imports: a thread would not survive a fork, and a
    # handler would make the child's logging.basicConfig a no-op.
    assert threading.active_count() == 1, threading.enumerate()
    assert not logging.getLogger().handlers
    out = sys.stdout.buffer
    _write(out, {"ready": True})
    children: dict[int, str] = {}
    pending = b""
    while True:
        _reap(children)
        ready, _, _ = select.select([0], [], [], 0.05)
        if not ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:  # the tests' process is gone: its children are its own to stop
            return None
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                return request  # type: ignore[no-any-return]
            children[pid] = request["status"]
            _write(out, {"pid": pid})


def _write(out: IO[bytes], message: dict[str, Any]) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def _reap(children: dict[int, str]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = children.pop(pid, None)
        if path is not None:
            Path(path).write_text(str(os.waitstatus_to_exitcode(status)))


def _become(request: dict[str, Any]) -> None:
    """Run the request's module as `python -m` would; its exit (a return, SystemExit, an
    uncaught exception) is this interpreter's, with the usual shutdown: threads joined,
    atexit run, streams flushed."""
    import importlib
    import runpy

    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    given = os.open(request["stdin"], os.O_RDONLY)
    for fd, target in ((0, given), (1, log), (2, err)):
        os.dup2(target, fd)
    for fd in (log, err, given):
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [request["module"], *request["args"]]
    if request["call"]:  # a console script's entry point, as its wrapper calls it
        module, name = request["call"].split(":")
        sys.exit(getattr(importlib.import_module(module), name)())
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    child = _serve()
    if child is not None:
        _become(child)
