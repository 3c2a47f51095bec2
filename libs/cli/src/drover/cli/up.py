"""`drover up`: a whole local cluster - embedded NATS and PostgreSQL (unless DROVER_NATS_URL /
DROVER_DATABASE_URL are given), migrations, and every service as its own process (a standby
plan applier too), restarted if one dies; an embedded server that dies is started again on its
data and port, and the services reconnect to it. Ctrl-C stops everything cleanly. Data lives
under the data directory and survives restarts. `--ha`: the servers as they run across machines
(docs/deployment.md), on this one: a three-server NATS cluster and a PostgreSQL primary with a
synchronous standby that pg_auto_failover promotes when the primary is lost.

The embedded servers want passwords, generated at the first start and kept in the data
directory (`nats.password`, `postgres.password`, mode 0600): the services are handed the files
(DROVER_NATS_PASSWORD_FILE, DROVER_DATABASE_PASSWORD_FILE), never the passwords in a URL or on a
command line. A PostgreSQL data directory made before it had a password keeps trusting local
connections."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from drover.runtime import embeddedha
from drover.runtime.embedded import (
    NATS_USER,
    EmbeddedNats,
    EmbeddedNatsCluster,
    EmbeddedPostgres,
    kept_password,
    write_private,
)
from drover.runtime.embeddedha import PgAutoFailover
from drover.runtime.keyring import Keyring, keyring_path
from drover.runtime.settings import Settings
from drover.runtime.store import migrate
from drover.scheduler.lanes import worker_lanes

console = Console()


@dataclass
class Child:
    service: str
    index: int
    proc: subprocess.Popen[bytes] | None = None
    restarts: list[float] = field(default_factory=list)


def service_plan(workers: int) -> list[tuple[str, int]]:
    """Every service `drover up` runs, and how many of each: a standby plan applier, a standby
    leader and a standby garbage collector, DROVER_WORKERS workers, and the audit subscriber
    (deploy/docker-compose.yml runs the same)."""
    return [
        ("relay", 1),
        ("broker", 1),
        ("planner", 2),
        ("worker", max(1, workers)),
        ("leader", 2),
        ("gc", 2),
        ("api", 1),
        ("audit", 1),
    ]


def cluster_env_file(data_dir: Path) -> Path:
    return data_dir / "cluster.env"


def embedded_settings(settings: Settings, data_dir: Path) -> tuple[Settings, dict[str, str]]:
    """`settings` with what the embedded servers are reached with filled in (their URLs, user
    and password files), and those as the environment the services are given."""
    env: dict[str, str] = {}
    if not settings.database_url:
        env["DROVER_DATABASE_PASSWORD_FILE"] = str(data_dir / "postgres.password")
    if not settings.nats_url:
        env["DROVER_NATS_USER"] = NATS_USER
        env["DROVER_NATS_PASSWORD_FILE"] = str(data_dir / "nats.password")
    update = {k.removeprefix("DROVER_").lower(): v for k, v in env.items()}
    return settings.model_copy(update=update), env


def revive(server: EmbeddedPostgres | EmbeddedNats) -> bool:
    """Start an embedded server that died again, on its data and its port (the URL the services
    hold): PostgreSQL recovers from its WAL, NATS from its JetStream store, and the services
    reconnect - what the API accepted meanwhile is in the log and goes out once NATS is back.
    Whether it was started again; a failed start is tried again on the next call."""
    proc = server.proc
    if proc is None or proc.poll() is None:
        return False
    name = "PostgreSQL" if isinstance(server, EmbeddedPostgres) else "NATS"
    console.print(f"[red]{name} exited ({proc.returncode}); starting it again on its data[/]")
    try:
        server.start()
    except Exception as e:  # its own log says why; the next round tries again
        console.print(f"[red]{name} did not start: {e}[/]")
        return False
    console.print(f"{name} is back on {server.url}")
    return True


def revive_formation(formation: PgAutoFailover) -> None:
    """Start again a pg_auto_failover keeper that exited: its node rejoins the formation."""
    for name in formation.dead_keepers():
        console.print(f"[red]PostgreSQL {name} exited; starting it again on its data[/]")
        formation.revive_keeper(name)


def start_servers(
    settings: Settings, data_dir: Path, env: dict[str, str], ha: bool,
    servers: list[EmbeddedPostgres | EmbeddedNats], formations: list[PgAutoFailover],
) -> None:  # fmt: skip
    """The embedded servers not given by URL, started, their URLs put into `env`: one NATS and
    one PostgreSQL; with `ha`, a three-server NATS cluster and a PostgreSQL primary with its
    synchronous standby and pg_auto_failover's monitor. Each is added to `servers` (revived on
    its own) or `formations` (whose keepers are) before it starts: stopped even if a later one
    fails to start."""
    if not settings.database_url:
        password = kept_password(Path(settings.database_password_file))
        if ha:
            if not embeddedha.available():
                raise RuntimeError(
                    "drover up --ha needs pg_auto_failover: apt-get install postgresql-15-auto-failover"
                )
            formation = PgAutoFailover(data_dir / "postgres-ha", password)
            formations.append(formation)
            env["DROVER_DATABASE_URL"] = formation.start()
        else:
            pg = EmbeddedPostgres(data_dir / "postgres", password=password)
            servers.append(pg)
            env["DROVER_DATABASE_URL"] = pg.start()
    if not settings.nats_url:
        password = kept_password(Path(settings.nats_password_file))
        if ha:
            cluster = EmbeddedNatsCluster(data_dir / "nats-ha", 3, user=settings.nats_user, password=password)
            servers.extend(cluster.servers)
            env["DROVER_NATS_URL"] = cluster.start()
        else:
            nats = EmbeddedNats(data_dir / "nats", user=settings.nats_user, password=password)
            servers.append(nats)
            env["DROVER_NATS_URL"] = nats.start()


def supervise(
    children: list[Child], spawn: Callable[[Child], None],
    servers: list[EmbeddedPostgres | EmbeddedNats], formations: list[PgAutoFailover],
) -> None:  # fmt: skip
    """Until SIGINT or SIGTERM: every half second, a server, keeper or service that died is
    started again (a service dying more than 5 times a minute is said so, and slowed)."""
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not stopping:
        time.sleep(0.5)
        for server in servers:
            if not stopping:
                revive(server)
        for formation in formations:
            if not stopping:
                revive_formation(formation)
        for c in children:
            if c.proc is not None and c.proc.poll() is not None and not stopping:
                now = time.monotonic()
                c.restarts = [t for t in c.restarts if now - t < 60] + [now]
                if len(c.restarts) > 5:
                    console.print(f"[red]{c.service}-{c.index} keeps dying; see its log[/]")
                    time.sleep(2)
                console.print(f"{c.service}-{c.index} exited ({c.proc.returncode}); restarting")
                spawn(c)


def stop_children(children: list[Child]) -> None:
    """Every service told to stop, then killed if it has not within 15 s."""
    console.print("stopping...")
    for c in children:
        if c.proc is not None and c.proc.poll() is None:
            c.proc.terminate()
    for c in children:
        if c.proc is not None:
            try:
                c.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                c.proc.kill()


def run_up(settings: Settings, ha: bool = False) -> None:
    data_dir = Path(settings.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    servers: list[EmbeddedPostgres | EmbeddedNats] = []
    formations: list[PgAutoFailover] = []
    settings, env = embedded_settings(settings, data_dir)
    try:
        start_servers(settings, data_dir, env, ha, servers, formations)
        env.setdefault("DROVER_DATABASE_URL", settings.database_url)
        env.setdefault("DROVER_NATS_URL", settings.nats_url)
        settings = settings.model_copy(
            update={"database_url": env["DROVER_DATABASE_URL"], "nats_url": env["DROVER_NATS_URL"]}
        )
        # A URL object prints a password it holds as `***`, wherever the URL came from.
        console.print(f"postgres  {settings.database()!r}")
        console.print(f"nats      {settings.nats_url}")
        migrate(settings.database())
        # What the CLI reads to reach this cluster (drover.cli.main): where the secrets are,
        # never the secrets (a URL given with its password is written as given).
        write_private(cluster_env_file(data_dir), "".join(f"{k}={v}\n" for k, v in sorted(env.items())))
        # The variables' keyring, once, before any API process may seal with it: every one
        # reads this file.
        keyring = Keyring(keyring_path(settings).resolve()).ensure()
        env = {**os.environ, **env, "DROVER_KEYRING": str(keyring.path)}
        logs = data_dir / "logs"
        logs.mkdir(exist_ok=True)
        children = [Child(svc, i) for svc, n in service_plan(settings.workers) for i in range(n)]
        lanes = worker_lanes(max(1, settings.workers), settings.large_evals)

        def spawn(c: Child) -> None:
            log = open(logs / f"{c.service}-{c.index}.log", "ab")  # noqa: SIM115 - owned by the child
            lane = {"DROVER_WORKER_LANE": lanes[c.index]} if c.service == "worker" else {}
            c.proc = subprocess.Popen(
                [sys.executable, "-m", f"drover.{c.service}"],
                env={**env, **lane},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        for c in children:
            spawn(c)
        console.print(
            f"[bold green]Drover API on http://{settings.api_host}:{settings.api_port}[/] "
            f"(logs in {logs}; Ctrl-C to stop)"
        )
        supervise(children, spawn, servers, formations)
        stop_children(children)
    finally:
        for s in reversed(servers):
            s.stop()
        for f in formations:
            f.stop()
        console.print("stopped")
