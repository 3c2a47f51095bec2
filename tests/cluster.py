"""Run Drover's services as separate processes against the test servers, and talk to the API."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from drover.client.identity import NodeSecretAuth
from drover.runtime.embedded import free_port, wait_for_port
from drover.runtime.settings import NatsCredentials, Settings
from drover.scheduler.lanes import worker_lanes

from .prefork import Process, spawn

SERVICES = ("relay", "broker", "planner", "worker", "leader", "gc", "api")
# The secret of every node a test registers by hand (node_json): the test is one client
# speaking for all of them, as drover sim is for its nodes.
NODE_SECRET = "d7e1c3a0-4b5f-4c2e-9a8d-6f0b1e2c3d4e"


def nats_credentials() -> NatsCredentials | None:
    """What the test's own NATS connections authenticate with: the services' settings (the
    harness sets them for the session, tests/conftest.py)."""
    return Settings().nats_credentials()


def nats_options() -> dict[str, Any]:
    """`nats_credentials` as nats-py's connect takes them."""
    credentials = nats_credentials()
    return credentials.connect_options() if credentials is not None else {}


def node_auth(secret: str = NODE_SECRET) -> NodeSecretAuth:
    """What an HTTP client sends its nodes' secret with (where no other token is chosen)."""
    return NodeSecretAuth(secret)


class Cluster:
    def __init__(
        self,
        database_url: str,
        nats_url: str,
        log_dir: Path,
        *,
        workers: int = 2,
        planners: int = 1,
        leaders: int = 1,
        gcs: int = 1,
        env: dict[str, str] | None = None,
    ) -> None:
        self.extra_env = env or {}
        self.database_url = database_url
        self.nats_url = nats_url
        self.log_dir = log_dir
        self.port = free_port()
        self.procs: dict[str, list[Process]] = {}
        self.counts = {
            "relay": 1,
            "broker": 1,
            "planner": planners,
            "worker": workers,
            "leader": leaders,
            "gc": gcs,
            "api": 1,
        }
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30, auth=node_auth())

    def env(self) -> dict[str, str]:
        """The services' environment: the test session's, less libpq's PGPASSWORD (the
        services connect with their own settings' password: DROVER_DATABASE_PASSWORD_FILE)."""
        return {
            **{k: v for k, v in os.environ.items() if k != "PGPASSWORD"},
            "DROVER_DATABASE_URL": self.database_url,
            "DROVER_NATS_URL": self.nats_url,
            "DROVER_API_PORT": str(self.port),
            "DROVER_LOG_LEVEL": "INFO",
            # Redeliver an unacked eval quickly, so a killed worker's eval is retried in-test.
            "DROVER_EVAL_ACK_WAIT": "3",
            # One keyring for every API process of the cluster (drover up makes one the same way).
            "DROVER_KEYRING": str(self.log_dir / "keyring.json"),
            "DROVER_WORKERS": str(self.counts["worker"]),
            **self.extra_env,
        }

    def spawn(self, service: str) -> Process:
        n = len(self.procs.get(service, []))
        env = self.env()
        if service == "worker":
            # Lanes as `drover up` assigns them; workers spawned later go round them again.
            large = env.get("DROVER_LARGE_EVALS")
            lanes = worker_lanes(self.counts["worker"], int(large) if large else None)
            env.setdefault("DROVER_WORKER_LANE", lanes[n % len(lanes)])
        proc = spawn(f"drover.{service}", [], env, self.log_dir / f"{service}-{n}.log")
        self.procs.setdefault(service, []).append(proc)
        return proc

    def start(self) -> Cluster:
        """Spawn every service and wait for the API. If it does not come up, every process is
        stopped before the error is raised: a fixture that fails here never reaches its
        teardown, and services left running against a dropped database load the machine
        (each retrying every second) until the tests after them time out too."""
        try:
            for svc in SERVICES:
                for _ in range(self.counts[svc]):
                    self.spawn(svc)
            # Generous: on a busy 2-core host, eight interpreters importing at once take a while.
            wait_for_port(self.port, 60, proc=self.procs["api"][0])
        except BaseException as e:
            self.stop()
            raise RuntimeError(f"the cluster did not start: {e}\n{self.logs()}") from e
        return self

    def kill(self, service: str, i: int = 0) -> None:
        proc = self.procs[service][i]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        self.http.close()
        for procs in self.procs.values():
            for p in procs:
                if p.poll() is None:
                    p.terminate()
        for procs in self.procs.values():
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()

    def logs(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text()[-3000:]}" for f in sorted(self.log_dir.glob("*.log")))

    # --- API helpers ---
    def put(self, path: str, body: Any) -> Any:
        r = self.http.put(path, json=body)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
        return r.json()

    def get(self, path: str, **params: Any) -> Any:
        r = self.http.get(path, params=params)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
        return r.json()

    def wait(self, fn: Any, timeout: float = 10.0, interval: float = 0.05, describe: Any = None) -> Any:
        """Poll `fn` until it returns something true; on timeout fail with `describe()` (what the
        cluster looked like) and the service logs. Each poll is a request or more to the API:
        at 20 ms the polls cost the suite's cluster tests 12% of their CPU (docs/experiments/test-suite.md)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(interval)
        seen = f"\nstate: {describe()!r}" if describe is not None else ""
        raise AssertionError(f"condition not met in {timeout}s (last: {last!r}){seen}\n{self.logs()}")


def node_json(node_id: str, *, cpu: int = 4000, mem: int = 8192, dc: str = "dc1") -> dict[str, Any]:
    """A node as an agent registers it, with a host network on loopback (the default dynamic
    port range)."""
    network = {"Mode": "host", "Device": "lo", "IP": "127.0.0.1", "CIDR": "127.0.0.1/32"}
    address = {"Family": "ipv4", "Alias": "default", "Address": "127.0.0.1"}
    return {
        "ID": node_id,
        "SecretID": NODE_SECRET,
        "Name": node_id,
        "Datacenter": dc,
        "Status": "ready",
        "Attributes": {"kernel.name": "linux", "unique.hostname": node_id},
        "Drivers": {"mock": {"Detected": True, "Healthy": True}},
        "NodeResources": {
            "Cpu": {"CpuShares": cpu},
            "Memory": {"MemoryMB": mem},
            "Disk": {"DiskMB": 100000},
            "Networks": [network],
            "NodeNetworks": [{"Mode": "host", "Device": "lo", "Addresses": [address]}],
        },
    }


def job_json(
    job_id: str, count: int, *, cpu: int = 500, mem: int = 256, rolling: bool = True
) -> dict[str, Any]:
    """A service job of mock tasks. `rolling=False`: no update strategy (MaxParallel 0), so no
    deployment, and the job may be scaled at once (Nomad refuses to while one is active)."""
    return {
        "Job": {
            "ID": job_id,
            "Datacenters": ["dc1"],
            "Type": "service",
            **({} if rolling else {"Update": {"MaxParallel": 0}}),
            "TaskGroups": [
                {
                    "Name": "web",
                    "Count": count,
                    "Tasks": [{"Name": "web", "Driver": "mock", "Resources": {"CPU": cpu, "MemoryMB": mem}}],
                }
            ],
        }
    }


def interruptible() -> None:
    """A child's Ctrl-C as on a terminal (a Popen preexec_fn): a process started in the
    background of a shell without job control (a CI runner's, say) inherits SIGINT ignored,
    and Python then never turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
