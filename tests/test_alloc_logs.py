"""Alloc logs end to end: a real agent runs raw_exec tasks whose output its executor writes
into rotated files, the agent serves them on its HTTP listener, and the API forwards
/v1/client/fs/logs to it. One cluster and one agent for the module."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nomad
import pytest

from drover.client.drivers import RawExecDriver

from .cluster import Cluster, interruptible, node_json
from .test_client import AGENT_START, ENV, Agents, service_job

DROVER = str(Path(sys.executable).parent / "drover")
MB = 1024 * 1024
# A task's deterministic output: `count` bytes from Random(seed), written in pieces.
WRITER = (
    "import random, sys, time\n"
    "r = random.Random({seed}); left = {count}\n"
    "while left:\n"
    "    n = min(left, 100_000); sys.stdout.buffer.write(r.randbytes(n)); sys.stdout.flush(); left -= n\n"
    "time.sleep(3600)\n"
)


def expected(seed: int, count: int) -> bytes:
    r, out, left = random.Random(seed), [], count
    while left:
        n = min(left, 100_000)
        out.append(r.randbytes(n))
        left -= n
    return b"".join(out)


def end_tasks(data_dir: Path) -> None:
    """Kill the tasks the agent left running (an agent that stops leaves its tasks, as Nomad's
    does): each executor leads its own process group, with its task in it."""
    path = data_dir / "client" / "state.json"
    state = json.loads(path.read_text()) if path.exists() else {}
    for alloc in state.values():
        for handle in alloc.get("Tasks", {}).values():
            # Only if it is still that executor: its pid may belong to another process by now.
            RawExecDriver.reattach(handle).signal(signal.SIGKILL)


@pytest.fixture(scope="module")
def setup(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, Agents, Path]]:
    """Every service and one agent with raw_exec, for the module."""
    tmp = tmp_path_factory.mktemp("logs")
    c = Cluster(module_database_url, nats_url, tmp, env=ENV).start()
    agents = Agents(c, tmp)
    try:
        agents.start("a1", "--enable-raw-exec")
        node_id = agents.node_id("a1")
        c.wait(
            lambda: [n for n in c.get("/v1/nodes") if n["ID"] == node_id and n["Status"] == "ready"],
            AGENT_START,
        )
        yield c, agents, tmp
    finally:
        agents.close()
        end_tasks(tmp / "a1")
        c.stop()


@pytest.fixture
def cluster(setup: tuple[Cluster, Agents, Path]) -> Cluster:
    return setup[0]


def run_python(c: Cluster, job_id: str, code: str, **task: Any) -> dict[str, Any]:
    """Register a job whose task runs `code` in Python; its alloc once it runs."""
    body = service_job(
        job_id, {"Driver": "raw_exec", "Config": {"command": sys.executable, "args": ["-c", code]}, **task}
    )
    c.put("/v1/jobs", body)
    return c.wait(
        lambda: next(
            (a for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"), None
        ),
        timeout=30,
    )


def logs(c: Cluster, alloc_id: str, **params: Any) -> httpx.Response:
    return c.http.get(f"/v1/client/fs/logs/{alloc_id}", params={"task": "t", "type": "stdout", **params})


def decode(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def data_of(frames: list[dict[str, Any]]) -> bytes:
    return b"".join(base64.b64decode(f["Data"]) for f in frames if f.get("Data"))


def wait_bytes(c: Cluster, alloc_id: str, n: int) -> bytes:
    """The task's stdout once it has at least `n` bytes."""

    def enough() -> bytes | None:
        r = logs(c, alloc_id, plain="true")
        assert r.status_code == 200, r.text
        return r.content if len(r.content) >= n else None

    return c.wait(enough, timeout=30)


def test_a_1mb_log_reads_back_byte_identical(cluster: Cluster) -> None:
    c = cluster
    alloc = run_python(c, "onemb", WRITER.format(seed=1, count=MB))
    want = expected(1, MB)
    assert wait_bytes(c, alloc["ID"], MB) == want
    frames = decode(logs(c, alloc["ID"]).content)
    assert data_of(frames) == want
    assert {f["File"] for f in frames} == {"alloc/logs/t.stdout.0"}
    assert frames[-1]["Offset"] == MB, "a frame's Offset is where its data ends in its file"
    tail = logs(c, alloc["ID"], origin="end", offset=1000, plain="true").content
    assert tail == want[-1000:]
    middle = logs(c, alloc["ID"], offset=MB - 10, plain="True").content  # python's spelling
    assert middle == want[-10:]


def follow_lines(c: Cluster, alloc_id: str, n: int, timeout: float = 60) -> list[str]:
    """Follow the task's stdout until `n` lines came (or the time is up)."""
    got = b""
    deadline = time.monotonic() + timeout
    params = {"task": "t", "type": "stdout", "follow": "true"}
    with c.http.stream("GET", f"/v1/client/fs/logs/{alloc_id}", params=params) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            got += base64.b64decode(json.loads(line).get("Data", ""))
            if got.count(b"\n") >= n or time.monotonic() > deadline:
                break
    return got.decode().splitlines()


def test_following_delivers_every_line_in_order(cluster: Cluster) -> None:
    c = cluster
    # 10,000 lines of 120 bytes: 1.2 MB, so the follower crosses a rotation (1 MB files).
    code = (
        "import sys, time\n"
        "for i in range(10000):\n"
        "    print(f'line {i:05d} ' + 'x' * 108, flush=True)\n"
        "    if i % 500 == 0: time.sleep(0.05)\n"
        "time.sleep(3600)\n"
    )
    alloc = run_python(c, "lines", code, LogConfig={"MaxFiles": 5, "MaxFileSizeMB": 1})
    got = follow_lines(c, alloc["ID"], 10000)
    assert got == [f"line {i:05d} " + "x" * 108 for i in range(10000)]


def test_rotation_keeps_max_files_and_reads_span_them(setup: tuple[Cluster, Agents, Path]) -> None:
    c, _, tmp = setup
    total = 5 * MB + MB // 2
    alloc = run_python(
        c, "rotated", WRITER.format(seed=3, count=total), LogConfig={"MaxFiles": 3, "MaxFileSizeMB": 1}
    )
    log_dir = tmp / "a1" / "allocs" / alloc["ID"] / "alloc" / "logs"
    want = expected(3, total)
    kept = 2 * MB + MB // 2  # files 3 and 4 whole, 5 half: 0, 1 and 2 purged
    last = log_dir / "t.stdout.5"
    c.wait(lambda: last.exists() and last.stat().st_size == MB // 2, timeout=30)
    got = logs(c, alloc["ID"], plain="true").content
    files = sorted(p.name for p in log_dir.glob("t.stdout.*"))
    assert files == ["t.stdout.3", "t.stdout.4", "t.stdout.5"]
    assert got == want[-kept:]
    frames = decode(logs(c, alloc["ID"]).content)
    assert [f["File"][-1] for f in frames if f.get("Data")][:1] == ["3"]
    assert {f["File"] for f in frames} == {f"alloc/logs/{name}" for name in files}
    # An offset from the end reaches back across files, as Nomad counts it.
    back = MB + 100
    assert logs(c, alloc["ID"], origin="end", offset=back, plain="true").content == want[-back:]
    assert logs(c, alloc["ID"], offset=MB + 7, plain="true").content == want[-kept + MB + 7 :]


def test_drover_alloc_logs_follows_a_task_as_it_writes(cluster: Cluster) -> None:
    c = cluster
    code = (
        "import sys, time\n"
        "print('to stderr', file=sys.stderr, flush=True)\n"
        "for i in range(1000):\n"
        "    print(f'tick {i}', flush=True); time.sleep(0.2)\n"
    )
    alloc = run_python(c, "ticker", code)
    env = {**os.environ, "NOMAD_ADDR": str(c.http.base_url)}
    proc = subprocess.Popen(
        [DROVER, "alloc", "logs", "-f", alloc["ID"][:8]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=interruptible,
    )
    try:
        assert proc.stdout is not None
        seen = []
        deadline = time.monotonic() + 30
        # Followed as written: after what was there when it started (all at once, however late
        # the command got going on a busy host), lines keep coming, one as each is written.
        while not seen or seen[-1][0] - seen[0][0] < 1.5:
            line = proc.stdout.readline().decode()
            assert line, f"drover alloc logs ended: {proc.stderr.read() if proc.stderr else ''}"
            seen.append((time.monotonic(), line.strip()))
            assert time.monotonic() < deadline, seen
        assert [text for _, text in seen] == [f"tick {i}" for i in range(len(seen))]
    finally:
        proc.send_signal(signal.SIGINT)
        code_ = proc.wait(10)
    assert code_ == 130
    # The other stream, and the tail of this one, without following.
    out = subprocess.run([DROVER, "alloc", "logs", "-stderr", alloc["ID"], "t"], capture_output=True, env=env)
    assert (out.returncode, out.stdout) == (0, b"to stderr\n")
    out = subprocess.run(
        [DROVER, "alloc", "logs", "-job", "-tail", "-n", "2", "ticker"], capture_output=True, env=env
    )
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 2, out
    assert all(line.startswith(b"tick ") for line in out.stdout.splitlines())
    out = subprocess.run([DROVER, "alloc", "logs", "ffffffff"], capture_output=True, env=env, text=True)
    assert out.returncode == 1 and "No allocation(s) with prefix" in out.stderr and not out.stdout


def test_python_nomad_reads_a_tasks_log(cluster: Cluster) -> None:
    c = cluster
    alloc = run_python(
        c, "pynomad", "import time\nprint('hello from drover', flush=True)\ntime.sleep(3600)\n"
    )
    wait_bytes(c, alloc["ID"], 1)
    client = nomad.Nomad(host="127.0.0.1", port=c.port, timeout=30)
    plain = client.client.stream_logs.stream(alloc["ID"], "t", "stdout", plain=True)
    assert plain == "hello from drover\n"
    framed = client.client.stream_logs.stream(alloc["ID"], "t", "stdout")
    assert data_of(decode(framed.encode())) == b"hello from drover\n"


def test_bad_requests_are_refused(cluster: Cluster) -> None:
    c = cluster
    alloc = run_python(c, "bad", "import time\nprint('x', flush=True)\ntime.sleep(3600)\n")
    r = c.http.get(
        f"/v1/client/fs/logs/{alloc['ID']}", params={"type": "stdin", "origin": "middle", "offset": "x"}
    )
    assert r.status_code == 400
    for problem in ("task name", "type must be stdout or stderr", "origin must be start or end", "offset"):
        assert problem in r.text, r.text
    assert logs(c, str(uuid.uuid4())).status_code == 404
    r = c.http.get(f"/v1/client/fs/logs/{alloc['ID']}", params={"task": "nope", "type": "stdout"})
    assert r.status_code == 400 and "unknown task name" in r.text, r.text
    # A node registered by hand (as drover sim registers its nodes) serves no logs.
    c.put("/v1/drover/node/register", {"Node": {**node_json("handmade"), "Meta": {"kind": "sim"}}})
    job = service_job("onsim", {"Driver": "mock", "Config": {"run_for": "1h"}})
    job["Job"]["Constraints"] = [{"LTarget": "${meta.kind}", "RTarget": "sim", "Operand": "="}]
    c.put("/v1/jobs", job)
    placed = c.wait(lambda: c.get("/v1/job/onsim/allocations"), timeout=30)
    r = logs(c, placed[0]["ID"])
    assert r.status_code == 501 and "serves no logs" in r.text, r.text


def test_logs_live_on_through_an_agent_restart(setup: tuple[Cluster, Agents, Path]) -> None:
    """The executor writes the logs: output written while the agent is down is all there, and
    the agent back (on a new port, registered again) serves it."""
    c, agents, _ = setup
    code = "import time\nfor i in range(150):\n    print(i, flush=True); time.sleep(0.04)\ntime.sleep(3600)\n"
    alloc = run_python(c, "survivor", code)
    node_id = alloc["NodeID"]
    before = c.get(f"/v1/node/{node_id}")["HTTPAddr"]
    agents.procs.pop("a1").kill()
    r = logs(c, alloc["ID"])
    assert r.status_code == 502 and "cannot be reached" in r.text, r.text
    agents.start("a1", "--enable-raw-exec")
    c.wait(lambda: c.get(f"/v1/node/{node_id}")["HTTPAddr"] != before, timeout=AGENT_START)
    assert follow_lines(c, alloc["ID"], 150, timeout=30) == [str(i) for i in range(150)]
