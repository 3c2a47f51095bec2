"""Integration test harness: real PostgreSQL and NATS JetStream servers, started here on free
ports in temp dirs (or taken from DROVER_DATABASE_URL / DROVER_NATS_URL). A test that cannot get
a server fails; nothing is skipped.

Both servers want passwords, as `drover up`'s do: NATS admits its user alone, PostgreSQL wants
scram-sha-256 of every connection. The services get them from their settings
(DROVER_NATS_USER and DROVER_NATS_PASSWORD_FILE, DROVER_DATABASE_PASSWORD_FILE, set here for the
session); the tests' own connections to PostgreSQL from libpq's PGPASSWORD, which the services
are not given (tests/cluster.py): every test with services proves they connect with theirs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from drover.runtime.embedded import NATS_USER, EmbeddedNats, EmbeddedPostgres, kept_password
from drover.runtime.settings import NatsCredentials, Settings
from drover.runtime.store import EventStore, migrate


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `cluster` every test whose module starts Drover's services as processes through
    tests/cluster.py's Cluster (modules that start them otherwise mark themselves), so that
    `pytest -m "not cluster"` is the fast inner loop."""
    for item in items:
        cls = getattr(getattr(item, "module", None), "Cluster", None)
        if isinstance(cls, type) and cls.__module__.rsplit(".", 1)[-1] == "cluster":
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session", autouse=True)
def _data_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The data directory of every API the tests make in-process (its keyring, the node secret
    key) in a temp dir, never the checkout's `data/`."""
    os.environ.setdefault("DROVER_DATA_DIR", str(tmp_path_factory.mktemp("data")))


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres | str]:
    external = os.environ.get("DROVER_DATABASE_URL")
    if external:
        yield external
        return
    root = tmp_path_factory.mktemp("pg")
    password = kept_password(root / "postgres.password")
    os.environ["DROVER_DATABASE_PASSWORD_FILE"] = str(root / "postgres.password")
    os.environ["PGPASSWORD"] = password
    server = EmbeddedPostgres(root / "server", durable=False, password=password)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNats | str]:
    external = os.environ.get("DROVER_NATS_URL")
    if external:
        yield external
        return
    root = tmp_path_factory.mktemp("nats")
    password = kept_password(root / "nats.password")
    os.environ["DROVER_NATS_USER"] = NATS_USER
    os.environ["DROVER_NATS_PASSWORD_FILE"] = str(root / "nats.password")
    server = EmbeddedNats(root / "server", password=password)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def nats_credentials(nats_server: EmbeddedNats | str) -> NatsCredentials | None:
    """What the tests' own NATS connections authenticate with (the services' settings)."""
    return Settings().nats_credentials()


def _base_url(pg: EmbeddedPostgres | str) -> str:
    return pg if isinstance(pg, str) else pg.url


# A migrated template database per test server, made once per pytest process: a fresh database
# is a copy of it (CREATE DATABASE ... TEMPLATE, about 60 ms), where migrating each took 0.35 s
# on an idle host, more than a test's own work for most API tests.
_templates: dict[str, str] = {}


def _template(conninfo: str, base: str) -> str:
    name = _templates.get(base)
    if name is None:
        name = "tmpl_" + uuid.uuid4().hex[:12]
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        migrate(base.rsplit("/", 1)[0] + "/" + name)
        _templates[base] = name
    return name


@pytest.fixture(scope="session", autouse=True)
def _drop_templates() -> Iterator[None]:
    """An external test server keeps no template after the session (an embedded one is gone)."""
    yield
    for base, name in _templates.items():
        conninfo = base.replace("postgresql+psycopg://", "postgresql://")
        with contextlib.suppress(psycopg.Error), psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_database(postgres: EmbeddedPostgres | str) -> Iterator[str]:
    """A new, migrated database on the test server, dropped afterwards."""
    base = _base_url(postgres)
    name = "t_" + uuid.uuid4().hex[:12]
    conninfo = base.replace("postgresql+psycopg://", "postgresql://")
    template = _template(conninfo, base)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    url = base.rsplit("/", 1)[0] + "/" + name
    # Its own log identity, as a migration gives each log: the relay's message IDs carry it, and
    # NATS would drop a copy's events as duplicates of an earlier test's.
    with psycopg.connect(conninfo.rsplit("/", 1)[0] + "/" + name, autocommit=True) as conn:
        conn.execute("UPDATE log_meta SET log_id = gen_random_uuid()::text")
    yield url
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(postgres: EmbeddedPostgres | str) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    with fresh_database(postgres) as url:
        yield url


@pytest.fixture(scope="module")
def module_database_url(postgres: EmbeddedPostgres | str) -> Iterator[str]:
    """A fresh, migrated database for a module's tests (those that share one cluster)."""
    with fresh_database(postgres) as url:
        yield url


@pytest.fixture
def store(database_url: str) -> Iterator[EventStore]:
    s = EventStore(database_url)
    yield s
    s.close()


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def nats_url(nats_server: EmbeddedNats | str) -> str:
    return nats_server if isinstance(nats_server, str) else nats_server.url


async def reset_jetstream(nc: Any) -> Any:
    """Drover's streams on `nc`, emptied, without consumers: a durable consumer kept from an
    earlier test would keep that test's settings (its ack wait). Returns the JetStream context."""
    from nats.js.errors import NotFoundError

    from drover.runtime.bus import EVALS_STREAM, EVENTS_STREAM, ensure_streams

    js = nc.jetstream()
    await ensure_streams(js)
    for name in (EVENTS_STREAM, EVALS_STREAM):
        await js.purge_stream(name)
        for info in await js.consumers_info(name):
            # An earlier test's ephemeral consumer may go by itself between the listing and this.
            with contextlib.suppress(NotFoundError):
                await js.delete_consumer(name, info.name)
    return js


@pytest.fixture
async def js_fresh(nats_url: str, nats_credentials: NatsCredentials | None):  # type: ignore[no-untyped-def]
    """A JetStream context with Drover's streams, emptied for this test (`reset_jetstream`)."""
    from drover.runtime.bus import connect

    nc = await connect(nats_url, "test", nats_credentials)
    yield await reset_jetstream(nc)
    await nc.close()


@pytest.fixture(scope="module")
def module_streams_fresh(nats_url: str, nats_credentials: NatsCredentials | None) -> None:
    """Drover's streams emptied, and without consumers, for a module's tests (those that share
    one cluster)."""

    async def empty() -> None:
        from drover.runtime.bus import connect

        nc = await connect(nats_url, "test", nats_credentials)
        await reset_jetstream(nc)
        await nc.close()

    asyncio.run(empty())
