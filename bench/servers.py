"""The servers a benchmark runs the services on: embedded PostgreSQL (migrated) and NATS in a
fresh directory, and every service as its own process (tests.cluster)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drover.runtime.embedded import EmbeddedNats, EmbeddedPostgres
from drover.runtime.store import EventStore, migrate
from tests.cluster import Cluster


@dataclass
class Servers:
    tmp: Path
    pg: EmbeddedPostgres
    nats: EmbeddedNats
    cluster: Cluster
    store: EventStore

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
    prefix: str = "drover-bench-", seed: Callable[[EventStore], object] | None = None, **cluster: Any
) -> Servers:
    """Start them; `seed`: writes to the log before the services start (they load it from the
    projections, as services restarted on a cluster that has run a while); `cluster`: what
    tests.cluster.Cluster takes besides the URLs and logs."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
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
