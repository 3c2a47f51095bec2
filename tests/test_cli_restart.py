"""`drover job restart` end to end: the command in a subprocess (its output not a terminal)
against a real cluster with a real agent. It follows a restart to its end in plain lines and
exits 0; -detach starts one and -attach follows it; Ctrl-C detaches and leaves it running;
-pause, -resume and -cancel act on it (a follower of a cancelled restart exits 1); the API's
refusals print its message and exit 2; -address, DROVER_ADDR and NOMAD_ADDR are honoured."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.runtime.embedded import free_port

from .cluster import Cluster, interruptible, job_json
from .test_client import AGENT_START, ENV, Agents, agents, allocs, raw_exec_job  # noqa: F401 - the agents fixture

DROVER = str(Path(sys.executable).parent / "drover")
# No deployments (max_parallel 0): a restart waits for none.
NO_DEPLOYMENT = {"Update": {"MaxParallel": 0}}


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV)
    yield c.start()
    c.stop()


def _env(**addr: str) -> dict[str, str]:
    """This environment without an API address of its own, and with `addr`'s."""
    env = {k: v for k, v in os.environ.items() if k not in ("DROVER_ADDR", "NOMAD_ADDR")}
    return {**env, **addr}


# `drover` with each HTTP request it sends written to $REQUEST_LOG: how it follows, seen.
COUNTED = """
import os, sys, httpx
send = httpx.Client.send
def counted(self, request, **kw):
    with open(os.environ["REQUEST_LOG"], "a") as f:
        f.write(f"{request.method} {request.url}\\n")
    return send(self, request, **kw)
httpx.Client.send = counted
from drover.cli.main import app
app(prog_name="drover")
"""


def drover(
    *args: str, env: dict[str, str], timeout: float = 90, command: tuple[str, ...] = (DROVER,)
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=timeout)


def spawn(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DROVER, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )


def _restart_id(out: str) -> str:
    m = re.search(r"^Restart ID: (\S+)$", out, re.M)
    assert m, out
    return m.group(1)


def _svc(c: Cluster, runners: Agents, count: int) -> list[dict[str, Any]]:
    """Job "svc" of `count` allocs running `sleep` on a real agent."""
    runners.start("a1", "--enable-raw-exec")
    c.wait(lambda: [n for n in c.get("/v1/nodes") if n["Status"] == "ready"], timeout=AGENT_START)
    c.put("/v1/jobs", raw_exec_job("svc", "/bin/sleep", "300", count=count, **NO_DEPLOYMENT))
    return c.wait(
        lambda: len(r := [a for a in allocs(c, "svc") if a["ClientStatus"] == "running"]) == count and r,
        timeout=30,
    )


def _status(c: Cluster, restart_id: str) -> str:
    return str(c.get(f"/v1/job/svc/restart/{restart_id}")["Status"])


def test_a_restart_followed_to_its_end_shows_each_batch_and_exits_0(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    before = _svc(c, agents, 3)
    requests = tmp_path / "requests"
    env = _env(DROVER_ADDR=str(c.http.base_url), NOMAD_ADDR="http://127.0.0.1:1", REQUEST_LOG=str(requests))
    p = drover("job", "restart", "-batch-size", "1", "-batch-wait", "1s", "svc", env=env,
               command=(sys.executable, "-c", COUNTED))  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    rid = _restart_id(p.stdout)
    lines = p.stdout.splitlines()
    progress = [line.split(" ", 1)[1] for line in lines[1:-1]]  # past each line's time
    # One line per change seen, never one twice in a row: the last batch's, and its end.
    assert all(a != b for a, b in itertools.pairwise(progress)), p.stdout
    assert all(re.fullmatch(r"(Starting \(3 batches\)|Batch [123] of 3( done)?): restarted [0-3] of 3 allocs, "
                            r"(running|complete)", x) for x in progress), p.stdout  # fmt: skip
    assert "Batch 3 of 3: restarted 3 of 3 allocs, running" in progress, p.stdout
    assert progress[-1] == "Batch 3 of 3 done: restarted 3 of 3 allocs, complete", p.stdout
    assert lines[-1] == f"Restart {rid} complete: Restarted 3 allocs in 3 batches", p.stdout
    r = c.get(f"/v1/job/svc/restart/{rid}")
    assert r["Status"] == "complete" and sorted(r["RestartedAllocs"]) == sorted(a["ID"] for a in before)
    # Followed with blocking queries, each answered once the restart changed: about a read per
    # line shown (a few spare for a query woken without a change), not a stream of polls.
    path = f"GET {c.http.base_url}/v1/job/svc/restart/{rid}"
    reads = [x for x in requests.read_text().splitlines() if x.startswith(path)]
    assert "index=" not in reads[0] and all("index=" in x and "wait=30s" in x for x in reads[1:]), reads
    assert len(reads) <= len(progress) + 4, (reads, progress)


def test_detach_then_attach_follows_it_and_ctrl_c_detaches(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    _svc(c, agents, 2)
    # -address wins over the environment's addresses.
    env = _env(DROVER_ADDR="http://127.0.0.1:1", NOMAD_ADDR="http://127.0.0.1:1")
    address = ("-address", str(c.http.base_url))
    # A wait between batches that outlasts the commands' start on a loaded host: the restart is
    # still running when the follower is interrupted.
    p = drover("job", "restart", *address, "-batch-wait", "10s", "-detach", "svc", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rid = _restart_id(p.stdout)
    assert f"drover job restart -attach {rid}" in p.stdout
    assert _status(c, rid) == "running"
    # Ctrl-C while following: detached, the restart goes on.
    follower = spawn("job", "restart", *address, "-attach", rid[:8], env=env)
    assert follower.stdout is not None
    assert follower.stdout.readline().strip() == f"Restart ID: {rid}"
    assert "restarted" in follower.stdout.readline()  # following
    follower.send_signal(signal.SIGINT)
    out, err = follower.communicate(timeout=30)
    assert follower.returncode == 130, out + err
    assert f"Detached; the restart goes on: drover job restart -attach {rid}" in err
    assert "Traceback" not in err
    assert _status(c, rid) == "running"
    # Attached again by its job and ID: to its end.
    p = drover("job", "restart", *address, "-attach", f"svc/{rid}", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == f"Restart {rid} complete: Restarted 2 allocs in 2 batches"
    assert _status(c, rid) == "complete"


def test_pause_resume_and_cancel_and_a_follower_of_a_cancelled_restart_exits_1(
    cluster: Cluster,
    agents: Agents,  # noqa: F811
) -> None:
    c = cluster
    _svc(c, agents, 3)
    env = _env(NOMAD_ADDR=str(c.http.base_url))  # honoured without DROVER_ADDR
    # A long wait between batches: the restart is still running when the cancel comes, however
    # slowly the commands below start on a loaded host.
    p = drover("job", "restart", "-batch-size", "1", "-batch-wait", "60s", "-detach", "svc", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rid = _restart_id(p.stdout)
    p = drover("job", "restart", "-pause", rid, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == f"Paused restart {rid} of job 'svc'"
    assert _status(c, rid) == "paused"
    follower = spawn("job", "restart", "-attach", rid, env=env)
    assert follower.stdout is not None
    follower.stdout.readline()  # its ID
    assert follower.stdout.readline().rstrip().endswith(", paused: Paused by an operator")
    p = drover("job", "restart", "-resume", rid, env=env)
    assert p.returncode == 0 and _status(c, rid) == "running", p.stdout + p.stderr
    p = drover("job", "restart", "-cancel", rid, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out, err = follower.communicate(timeout=30)
    assert follower.returncode == 1, out + err
    assert out.splitlines()[-1] == f"Restart {rid} cancelled: Cancelled by an operator"
    # The API's refusal, as it says it.
    p = drover("job", "restart", "-cancel", rid, env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip() == "Error: can't cancel a cancelled restart"


def test_refusals_print_the_apis_message_and_exit_2(cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/jobs", job_json("web", 2))  # no node: its allocs never run, but it can be asked
    env = _env(DROVER_ADDR=str(c.http.base_url))
    p = drover("job", "restart", "-batch-size", "0", "-on-error", "explode", "-group", "nope", "web", env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.splitlines() == [
        "Error: Restart is invalid:",
        "BatchSize must be at least 1, not 0",
        "Group 'nope' is not a task group of job 'web'",
        "OnError must be 'pause' or 'fail', not 'explode'",
    ], p.stderr
    assert p.stdout == ""
    p = drover("job", "restart", "ghost", env=env)
    assert (p.returncode, p.stderr.strip()) == (2, "Error: job not found"), p.stderr
    p = drover("job", "restart", "-attach", "0123", env=env)
    assert p.returncode == 2 and "no restart with ID '0123'" in p.stderr, p.stderr
    p = drover("job", "restart", "web", env=_env(DROVER_ADDR=f"http://127.0.0.1:{free_port()}"))
    assert p.returncode == 2 and "can't reach the API at http://127.0.0.1:" in p.stderr, p.stderr
    # Bad usage, before any request.
    p = drover("job", "restart", "-attach", "x", "-batch-size", "2", env=env)
    assert p.returncode == 2 and "-batch-size only go with a job to restart" in p.stderr, p.stderr
    assert all("Traceback" not in x for x in (p.stdout, p.stderr))
