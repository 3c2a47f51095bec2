"""PostgreSQL with automatic failover on one machine, for trying and testing Drover's HA
topology: a pg_auto_failover formation (Debian's `postgresql-15-auto-failover`) of a monitor
and two nodes, a primary and a synchronous standby, each a `pg_autoctl run` keeper we own.

The services reach it through one multi-host URL (`url`): libpq tries both nodes and keeps the
one that takes writes (`target_session_attrs=read-write`), so after a failover a reconnect
finds the new primary. Every TCP connection wants a password (scram-sha-256): the application's
`postgres` role and pg_auto_failover's own (`autoctl_node`, `pgautofailover_replicator`,
`pgautofailover_monitor`) share the formation's generated password, which the keepers and the
servers they start read from a passfile of their user's alone; only the keepers' local socket,
in a directory of that user's alone, is trusted.

The monitor's timings are shortened from pg_auto_failover's defaults (a primary judged
unhealthy after 20 s, then 30 s for it to demote itself) to `FAILOVER_SETTINGS`: a dead primary
is replaced in about 10 s. A partitioned old primary cannot acknowledge a write meanwhile: with
its standby gone it waits for a synchronous standby that never answers."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from drover.runtime.embedded import _run_as, free_port, write_private

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PG_AUTOCTL = "/usr/bin/pg_autoctl"
FORMATION_ROLES = ("postgres", "pgautofailover_replicator", "pgautofailover_monitor")
FAILOVER_SETTINGS = {
    "health_check_period": 1000,
    "health_check_timeout": 1000,
    "health_check_max_retries": 1,
    "health_check_retry_delay": 500,
    "node_considered_unhealthy_timeout": 3000,
    "primary_demote_timeout": 8000,
}
# Ours, not pg_autoctl's: trust only on the keepers' own socket directory.
NODE_HBA = (
    "local all all trust\n"
    "host all all 127.0.0.1/32 scram-sha-256\n"
    "host replication all 127.0.0.1/32 scram-sha-256\n"
)
MONITOR_HBA = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"


def available() -> bool:
    """Whether pg_auto_failover and the PostgreSQL it runs on are installed here."""
    return os.path.exists(PG_AUTOCTL) and (PG_BIN / "pg_ctl").exists()


class PgAutoFailover:
    """A monitor and `nodes` PostgreSQL nodes under `data_dir`, on loopback ports of their own."""

    def __init__(self, data_dir: Path, password: str, nodes: int = 2) -> None:
        self.data_dir = Path(data_dir)
        self.password = password
        # The ports a formation was made with are its nodes' for good (the monitor knows them).
        kept = self.data_dir / "ports.json"
        if kept.exists():
            ports = json.loads(kept.read_text())
            self.monitor_port, self.ports = int(ports["monitor"]), [int(p) for p in ports["nodes"]]
        else:
            self.monitor_port = free_port()
            self.ports = [free_port() for _ in range(nodes)]
        self.keepers: dict[str, subprocess.Popen[bytes]] = {}
        self.uid, self.gid = _run_as()

    # ---- addresses --------------------------------------------------------------------------

    @property
    def sock_dir(self) -> Path:
        """The servers' socket directory: a short path of the system's temporary directory named
        after the data directory (a Unix socket's path is at most 107 bytes, which a data
        directory deep in a test's temporary tree passes), the keepers' user's alone."""
        digest = hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"drover-pg-{digest}"

    @property
    def url(self) -> str:
        """The services' URL, without the password (DROVER_DATABASE_PASSWORD carries it)."""
        hosts = "&".join(f"host=127.0.0.1:{p}" for p in self.ports)
        return f"postgresql+psycopg://postgres@/postgres?{hosts}&target_session_attrs=read-write"

    def _monitor_uri(self) -> str:
        return f"postgres://autoctl_node@127.0.0.1:{self.monitor_port}/pg_auto_failover?sslmode=disable"

    def _dir(self, name: str) -> Path:
        return self.data_dir / name

    # ---- processes --------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        home = self.data_dir
        return {
            "PATH": f"{PG_BIN}:/usr/bin:/bin",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "state"),
            "XDG_RUNTIME_DIR": str(home / "run"),
            "PG_REGRESS_SOCK_DIR": str(self.sock_dir),
            "PGHOST": str(self.sock_dir),
            "PGPASSFILE": str(home / "pgpass"),
            "PGCONNECT_TIMEOUT": "2",
            # initdb takes its encoding from the locale: UTF-8, as Drover's documents want.
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }

    def _autoctl(self, *args: str) -> str:
        out = subprocess.run(
            [PG_AUTOCTL, *args], env=self._env(), user=self.uid, group=self.gid, capture_output=True,
            text=True, timeout=180,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(
                f"pg_autoctl {args[0]} {args[1] if len(args) > 1 else ''} failed:\n{out.stderr[-3000:]}"
            )
        return out.stdout

    def _run(self, name: str) -> None:
        log = open(self.data_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        self.keepers[name] = subprocess.Popen(
            [PG_AUTOCTL, "run", "--pgdata", str(self._dir(name))], env=self._env(), user=self.uid,
            group=self.gid, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def _chown(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)

    def _prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The keepers' user must be able to reach the data directory (a test's is root's, 0700).
        for parent in self.data_dir.parents:
            with contextlib.suppress(PermissionError):
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    parent.chmod(mode | 0o011)
        for d in [self.data_dir / sub for sub in ("", "config", "state", "run")] + [self.sock_dir]:
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o700)
            self._chown(d)
        (self.data_dir / "ports.json").write_text(
            json.dumps({"monitor": self.monitor_port, "nodes": self.ports})
        )
        passfile = self.data_dir / "pgpass"
        write_private(passfile, f"127.0.0.1:*:*:*:{self.password}\n")
        self._chown(passfile)

    def _hba(self, name: str, text: str) -> None:
        hba = self._dir(name) / "pg_hba.conf"
        hba.write_text(text)
        self._chown(hba)

    def _local(self, port: int, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """A superuser connection over the keepers' socket (as the keepers' OS user)."""
        user = "pgserver" if self.uid is not None else None
        return psycopg.connect(
            host=str(self.sock_dir),
            port=port,
            dbname=dbname,
            user=user,
            autocommit=True,
            connect_timeout=2,
        )

    # ---- life -------------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> str:
        """Create what is not there yet, run every keeper, and wait for a primary and a
        synchronous standby."""
        self._prepare()
        if not (self._dir("monitor") / "PG_VERSION").exists():
            self._autoctl("create", "monitor", "--pgdata", str(self._dir("monitor")), "--pgport",
                          str(self.monitor_port), "--hostname", "127.0.0.1", "--no-ssl",
                          "--skip-pg-hba")  # fmt: skip
            self._hba("monitor", MONITOR_HBA)
        self._run("monitor")
        self._until(self._set_up_monitor, timeout, "the monitor never answered")
        for i, port in enumerate(self.ports):
            name = f"node{i}"
            if not (self._dir(name) / "PG_VERSION").exists():
                self._autoctl("create", "postgres", "--pgdata", str(self._dir(name)), "--pgport", str(port),
                              "--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--monitor", self._monitor_uri(),
                              "--no-ssl", "--skip-pg-hba", "--dbname", "postgres",
                              "--username", "postgres", "--name", name)  # fmt: skip
                if i == 0:
                    self._hba(name, NODE_HBA)
            self._run(name)
            if i == 0:
                self._until(self._set_up_primary, timeout, "the first node never became primary")
        self.wait_healthy(timeout)
        return self.url

    def _set_up_monitor(self) -> bool:
        try:
            with self._local(self.monitor_port, "pg_auto_failover") as conn:
                conn.execute(f"ALTER ROLE autoctl_node PASSWORD '{self.password}'")
                for name, value in FAILOVER_SETTINGS.items():
                    conn.execute(f"ALTER SYSTEM SET pgautofailover.{name} = {value}")
                conn.execute("SELECT pg_reload_conf()")
            return True
        except psycopg.OperationalError:
            return False

    def _set_up_primary(self) -> bool:
        """Passwords on the first node's roles (its standby copies them with its data), once
        it is primary."""
        try:
            with self._local(self.ports[0]) as conn:
                if conn.execute("SELECT pg_is_in_recovery()").fetchone() != (False,):
                    return False
                for role in FORMATION_ROLES:
                    conn.execute(f"ALTER ROLE {role} PASSWORD '{self.password}'")
            return True
        except psycopg.OperationalError:
            return False

    def states(self) -> dict[str, str]:
        """Each node's state as the monitor reports it (`primary`, `secondary`, `wait_primary`...)."""
        try:
            out = self._autoctl("show", "state", "--pgdata", str(self._dir("monitor")), "--json")
        except RuntimeError:
            return {}
        return {n["nodename"]: n["current_group_state"] for n in json.loads(out)}

    def primary(self) -> int | None:
        """The index of the node that takes writes now."""
        for i, port in enumerate(self.ports):
            with contextlib.suppress(psycopg.OperationalError), self._local(port) as conn:
                if conn.execute("SELECT pg_is_in_recovery()").fetchone() == (False,):
                    return i
        return None

    def wait_healthy(self, timeout: float = 120.0) -> None:
        def healthy() -> bool:
            states = sorted(self.states().values())
            return states == ["primary", "secondary"]

        self._until(healthy, timeout, "the formation never had a primary and a standby")

    def kill(self, i: int) -> None:
        """kill -9 a node's keeper and its server, as the loss of its machine."""
        name = f"node{i}"
        proc = self.keepers.get(name)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self._kill_postmaster(name)

    def _kill_postmaster(self, name: str) -> None:
        """The server by its pid file: a postmaster renames its process title, so it is not found
        by its command line; one left behind would hold the port and the data directory."""
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            pid = int((self._dir(name) / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGKILL)

    def dead_keepers(self) -> list[str]:
        """The keepers that exited (their node down), to be started again (`revive_keeper`)."""
        return [name for name, proc in self.keepers.items() if proc.poll() is not None]

    def revive_keeper(self, name: str) -> None:
        self._kill_postmaster(name)
        self._run(name)

    def revive(self, i: int) -> None:
        """Start a killed node's keeper again: it rejoins as a standby of the new primary."""
        self._run(f"node{i}")

    def stop(self) -> None:
        for proc in self.keepers.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self.keepers.items():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                self._kill_postmaster(name)

    @staticmethod
    def _until(ok: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ok():
            if time.monotonic() > deadline:
                raise TimeoutError(what)
            time.sleep(0.5)
