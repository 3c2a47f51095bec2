"""`drover up` (what `make up` runs) as a user runs it: embedded NATS and PostgreSQL under the data
directory, every service its own process, the API answering; Ctrl-C stops everything; a second
run finds the cluster as it was left."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import nats
import psycopg
import pytest

from drover.cli.up import service_plan
from drover.runtime import embeddedha
from drover.runtime.embedded import free_port

from .cluster import job_json, node_json

pytestmark = pytest.mark.cluster


def _up(data_dir: Path, port: int, log: Path, *flags: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    env.update({"DROVER_DATA_DIR": str(data_dir), "DROVER_API_PORT": str(port), "DROVER_WORKERS": "1"})
    return subprocess.Popen(
        [sys.executable, "-c", "from drover.cli.main import app; app()", "up", *flags],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _wait_api(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/nodes", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"the API never answered\n{log.read_text()}")


def test_up_runs_everything_stops_cleanly_and_keeps_its_data(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "up.log"
    port = free_port()
    proc = _up(data_dir, port, log)
    try:
        _wait_api(port, proc, log)
        api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
        assert api.put("/v1/drover/node/register", json={"Node": node_json("kept")}).status_code == 200
        # A variable, sealed with the keyring `drover up` made once in the data directory.
        assert api.put("/v1/var/app/kept", json={"Items": {"k": "sealed"}}).status_code == 200
        assert (data_dir / "keyring.json").exists()
        children = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout.split()
        names = {
            Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[2].decode()
            for pid in children
            if Path(f"/proc/{pid}/cmdline").exists() and b"-m" in Path(f"/proc/{pid}/cmdline").read_bytes()
        }
        assert {
            "drover.api",
            "drover.relay",
            "drover.broker",
            "drover.worker",
            "drover.planner",
            "drover.leader",
            "drover.gc",
        } <= names, names
        # the plan applier, the leader and the garbage collector each have a standby
        for standby in ("planner-1", "leader-1", "gc-1"):
            assert (data_dir / "logs" / f"{standby}.log").exists()
        _check_passwords(data_dir, children, log)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()
    for pid in children:
        assert (
            not Path(f"/proc/{pid}").exists() or b"zombie" in Path(f"/proc/{pid}/status").read_bytes().lower()
        )
    with httpx.Client(timeout=2) as h:
        try:
            h.get(f"http://127.0.0.1:{port}/v1/nodes")
            raise AssertionError("the API still answers after Ctrl-C")
        except httpx.HTTPError:
            pass

    again = _up(data_dir, port, log)
    try:
        _wait_api(port, again, log)
        node = httpx.get(f"http://127.0.0.1:{port}/v1/node/kept", timeout=10)
        assert node.status_code == 200 and node.json()["ID"] == "kept"
        # The same keyring again: the variable still opens.
        var = httpx.get(f"http://127.0.0.1:{port}/v1/var/app/kept", timeout=10)
        assert var.status_code == 200 and var.json()["Items"] == {"k": "sealed"}
    finally:
        again.send_signal(signal.SIGINT)
        assert again.wait(60) == 0, log.read_text()


def _check_passwords(data_dir: Path, children: list[str], log: Path) -> None:
    """NATS and PostgreSQL want the passwords `drover up` made (files of mode 0600 in the data
    directory); the services were handed the files, not the passwords: neither is in the file
    the CLI reads, in a command line, or in the output."""
    passwords = {name: (data_dir / f"{name}.password").read_text().strip() for name in ("nats", "postgres")}
    for name in passwords:
        assert (data_dir / f"{name}.password").stat().st_mode & 0o777 == 0o600
    env = dict(line.split("=", 1) for line in (data_dir / "cluster.env").read_text().splitlines())
    assert env["DROVER_NATS_USER"] == "drover" and Path(env["DROVER_NATS_PASSWORD_FILE"]).exists()
    assert Path(env["DROVER_DATABASE_PASSWORD_FILE"]).exists()
    nats_url, db_url = env["DROVER_NATS_URL"], env["DROVER_DATABASE_URL"]

    async def nats_admits(**auth: str) -> bool:
        try:
            nc = await nats.connect(nats_url, allow_reconnect=False, max_reconnect_attempts=0, **auth)
        except Exception:
            return False
        await nc.close()
        return True

    assert not asyncio.run(nats_admits())
    assert not asyncio.run(nats_admits(user="drover", password="not-it"))
    assert asyncio.run(nats_admits(user="drover", password=passwords["nats"]))
    conninfo = db_url.replace("postgresql+psycopg://", "postgresql://")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(conninfo, password="not-it").close()
    psycopg.connect(conninfo, password=passwords["postgres"]).close()
    seen = "\n".join(
        [(data_dir / "cluster.env").read_text(), log.read_text(errors="replace")]
        + [
            Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            for pid in children
            if Path(f"/proc/{pid}").exists()
        ]
        + [f.read_text(errors="replace") for f in (data_dir / "logs").glob("*.log")]
    )
    assert [name for name, pw in passwords.items() if pw in seen] == []


def test_the_compose_file_runs_what_drover_up_runs(repo_root: Path) -> None:
    """deploy/docker-compose.yml starts every service `drover up` starts, with a standby
    where `drover up` has one (no Docker daemon is needed to read it)."""
    text = (repo_root / "deploy" / "docker-compose.yml").read_text()
    services = text.split("\nservices:\n", 1)[1]
    compose: dict[str, int] = {}
    for block in re.split(r"\n(?=  [a-z-]+:\n)", services):
        command = re.search(r'command: \["drover-(\w+)"\]', block)
        if command:
            replicas = re.search(r"replicas: (\d+)", block)
            compose[command[1]] = int(replicas[1]) if replicas else 1
    up = dict(service_plan(workers=2))
    assert set(compose) == set(up)
    assert all(compose[svc] >= min(n, 2) for svc, n in up.items())


def _server_pid(up: subprocess.Popen[bytes], binary: bytes) -> int:
    """The pid of `drover up`'s embedded server whose command line starts with `binary`."""
    for pid in subprocess.run(["pgrep", "-P", str(up.pid)], capture_output=True, text=True).stdout.split():
        cmdline = Path(f"/proc/{pid}/cmdline")
        if cmdline.exists() and cmdline.read_bytes().split(b"\0")[0].endswith(binary):
            return int(pid)
    raise AssertionError(f"no {binary!r} under drover up")


def _placed(api: httpx.Client, job_id: str, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        allocs = api.get(f"/v1/job/{job_id}/allocations").json() if _answers(api) else []
        if len([a for a in allocs if a["ClientStatus"] == "running"]) == count:
            return
        time.sleep(0.5)
    raise AssertionError(f"{job_id} not placed: {allocs}")


def _answers(api: httpx.Client) -> bool:
    try:
        return api.get("/v1/agent/health").status_code == 200
    except httpx.HTTPError:
        return False


def test_up_starts_a_dead_embedded_server_again_and_what_was_accepted_meanwhile_is_placed(
    tmp_path: Path,
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "up.log"
    port = free_port()
    proc = _up(data_dir, port, log)
    sim = None
    try:
        _wait_api(port, proc, log)
        address = f"http://127.0.0.1:{port}"
        sim = subprocess.Popen(
            [sys.executable, "-m", "drover.client.sim", "--api", address, "--nodes", "3",
             "--data-dir", str(tmp_path / "sim")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        api = httpx.Client(base_url=address, timeout=10)
        deadline = time.monotonic() + 30
        while len(api.get("/v1/nodes").json()) < 3:
            assert time.monotonic() < deadline, "the sim's nodes never registered"
            time.sleep(0.3)

        # NATS killed: the API still takes the job into the log; it is placed once NATS is back.
        os.kill(_server_pid(proc, b"nats-server"), signal.SIGKILL)
        assert api.put("/v1/jobs", json=job_json("while-nats-down", 3, rolling=False)).status_code == 200
        _placed(api, "while-nats-down", 3)
        assert "NATS exited" in log.read_text() and "NATS is back" in log.read_text()

        # PostgreSQL killed: started again on its data; nothing accepted before is lost.
        os.kill(_server_pid(proc, b"postgres"), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (r := api.put("/v1/jobs", json=job_json("after-pg-back", 2, rolling=False))).status_code != 200:
            # Meanwhile a register is refused as a client can act on: retry later, nothing kept.
            assert r.status_code == 503 and r.text.startswith("PostgreSQL unreachable"), r.text
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        _placed(api, "while-nats-down", 3)
        _placed(api, "after-pg-back", 2)
        assert "PostgreSQL is back" in log.read_text()
        status = subprocess.run(
            [sys.executable, "-c", "from drover.cli.main import app; app()", "status", "-address", address],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert "Servers   = ok" in status.stdout, status.stdout + status.stderr
    finally:
        if sim is not None:
            sim.send_signal(signal.SIGTERM)
            sim.wait(30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()


@pytest.mark.skipif(
    not embeddedha.available() and os.environ.get("CI") != "true",
    reason="no pg_auto_failover (apt-get install postgresql-15-auto-failover)",
)
def test_up_ha_runs_on_a_nats_cluster_and_a_postgres_primary_with_its_standby(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "up.log"
    port = free_port()
    proc = _up(data_dir, port, log, "--ha")
    sim = None
    try:
        _wait_api(port, proc, log, timeout=180)
        env = dict(line.split("=", 1) for line in (data_dir / "cluster.env").read_text().splitlines())
        assert len(env["DROVER_NATS_URL"].split(",")) == 3
        assert "target_session_attrs=read-write" in env["DROVER_DATABASE_URL"]
        address = f"http://127.0.0.1:{port}"
        sim = subprocess.Popen(
            [sys.executable, "-m", "drover.client.sim", "--api", address, "--nodes", "2",
             "--data-dir", str(tmp_path / "sim")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        api = httpx.Client(base_url=address, timeout=10)
        assert api.put("/v1/jobs", json=job_json("ha", 2, rolling=False)).status_code == 200
        _placed(api, "ha", 2, timeout=90)
        # One of the three NATS servers killed: started again, and the cluster goes on.
        os.kill(_server_pid(proc, b"nats-server"), signal.SIGKILL)
        assert api.put("/v1/jobs", json=job_json("ha-after", 1, rolling=False)).status_code == 200
        _placed(api, "ha-after", 1, timeout=90)
        assert "NATS is back" in log.read_text()
    finally:
        if sim is not None:
            sim.send_signal(signal.SIGTERM)
            sim.wait(30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(90) == 0, log.read_text()
