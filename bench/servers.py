"""The servers a benchmark runs the services on: embedded PostgreSQL (migrated) and NATS in a
fresh directory, and every service as its own process (tests.cluster). `ha`: the topology of
docs/deployment.md on this machine instead - three NATS servers in one JetStream cluster and a
PostgreSQL primary with its synchronous standby (pg_auto_failover)."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from drover.runtime.embedded import EmbeddedNats, EmbeddedNatsCluster, EmbeddedPostgres
from drover.runtime.embeddedha import PgAutoFailover
from drover.runtime.store import EventStore, migrate
from tests.cluster import Cluster


@dataclass
class Servers:
    tmp: Path
    pg: EmbeddedPostgres | PgAutoFailover
    nats: EmbeddedNats | EmbeddedNatsCluster
    cluster: Cluster
    store: EventStore

    def server_pids(self) -> list[tuple[str, int]]:
        """The servers' processes, whose trees hold their CPU: NATS's, and PostgreSQL's
        postmaster (or each pg_auto_failover keeper, which starts its node's server)."""
        nats = self.nats.servers if isinstance(self.nats, EmbeddedNatsCluster) else [self.nats]
        out = [(f"nats-{i}" if len(nats) > 1 else "nats", s.proc.pid) for i, s in enumerate(nats) if s.proc]
        if isinstance(self.pg, PgAutoFailover):
            out += [(f"postgres-{name}", p.pid) for name, p in self.pg.keepers.items()]
        elif self.pg.proc is not None:
            out.append(("postgres", self.pg.proc.pid))
        return out

    def stop(self, keep: bool = False) -> None:
        """Stop everything and remove its directory (`keep`: leave it, logs and data, for the
        caller to read and remove: `remove`)."""
        self.cluster.stop()
        self.store.close()
        self.nats.stop()
        self.pg.stop()
        if not keep:
            self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def start(
    prefix: str = "drover-bench-", seed: Callable[[EventStore], object] | None = None, ha: bool = False,
    **cluster: Any,
) -> Servers:  # fmt: skip
    """Start them; `seed`: writes to the log before the services start (they load it from the
    projections, as services restarted on a cluster that has run a while); `cluster`: what
    tests.cluster.Cluster takes besides the URLs and logs."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    pg: EmbeddedPostgres | PgAutoFailover
    nats: EmbeddedNats | EmbeddedNatsCluster
    if ha:
        password = secrets.token_urlsafe(24)
        pg, nats = PgAutoFailover(tmp / "pg", password), EmbeddedNatsCluster(tmp / "nats", 3)
        db_url = make_url(pg.start()).set(password=password).render_as_string(hide_password=False)
        nats_url = nats.start()
    else:
        pg, nats = EmbeddedPostgres(tmp / "pg"), EmbeddedNats(tmp / "nats")
        db_url, nats_url = pg.start(), nats.start()
    migrate(db_url)
    store = EventStore(db_url)
    try:
        if seed is not None:
            seed(store)
        (tmp / "logs").mkdir()
        running = Cluster(db_url, nats_url, tmp / "logs", **cluster).start()
    except BaseException:
        store.close()
        nats.stop()
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Servers(tmp, pg, nats, running, store)
