"""The template's children behave as `python -m` processes would: their own environment, working
directory, argv and log; their exit status, signals and Popen's driving."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from drover.runtime.embedded import free_port, wait_for_port

from .prefork import DROVER, Forked, run_drover, spawn


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "DROVER_TEST_SPAWN"} | extra


@pytest.fixture(autouse=True)
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DROVER_TEST_SPAWN", raising=False)


def test_a_child_has_its_own_environment_directory_and_log(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    work = tmp_path / "work"
    work.mkdir()
    statement = "import os, sys; print(os.environ['PREFORK_PROBE'], os.getcwd(), sys.argv[0])"
    cwd = os.getcwd()
    try:
        os.chdir(work)
        p = spawn("timeit", ["-n1", "-r1", "-s", statement, "pass"], _env(PREFORK_PROBE="probe-1"), log)
    finally:
        os.chdir(cwd)
    assert isinstance(p, Forked)
    assert p.wait(30) == 0, log.read_text()
    first = log.read_text().splitlines()[0]
    assert first.split()[:2] == ["probe-1", str(work)], first
    assert first.split()[2].endswith("timeit.py"), first  # argv[0] as `python -m` sets it


def test_exit_codes_and_uncaught_exceptions_are_the_processes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    p = spawn("json.tool", [str(bad)], _env(), tmp_path / "bad.log")
    assert p.wait(30) == 1
    assert "Expecting property name" in (tmp_path / "bad.log").read_text()
    raising = spawn("timeit", ["-n1", "-r1", "raise KeyError('x')"], _env(), tmp_path / "raise.log")
    assert raising.wait(30) == 1
    assert "KeyError" in (tmp_path / "raise.log").read_text()


def test_a_running_child_is_polled_signalled_and_reaped(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    p = spawn("http.server", ["--bind", "127.0.0.1", str(port)], _env(), log)
    assert log.exists()  # there on return, as a Popen's log is
    wait_for_port(port, 30, proc=p)
    assert p.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(0.2)
    p.kill()
    assert p.wait(10) == -signal.SIGKILL
    p.kill()  # a no-op once it has ended: its pid may be another process's by now
    q = spawn("http.server", ["--bind", "127.0.0.1", str(free_port())], _env(), tmp_path / "q.log")
    q.terminate()
    assert q.wait(10) in (-signal.SIGTERM, 0)


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["job", "status", "-address", "http://127.0.0.1:1"], None),  # refused: stderr, exit 1
        (["job", "validate", "-"], '{"Job": {"ID": "x"}}'),  # the jobspec read from stdin
        (["--help"], None),
    ],
)
def test_the_cli_forked_answers_as_the_drover_script_does(args: list[str], stdin: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOMAD_", "DROVER_ADDR"))}
    forked = run_drover(args, env, 30, stdin)
    script = subprocess.run([DROVER, *args], env=env, input=stdin, capture_output=True, text=True, timeout=30)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        script.returncode,
        script.stdout,
        script.stderr,
    )
