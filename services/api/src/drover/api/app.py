"""The HTTP API: Nomad's paths and JSON under /v1, plus Drover's own endpoints for clients.
This module only composes: one router per resource (drover.api.routes), the request guard,
plain-text errors, and the state the dependencies hand out (drover.api.deps). Writes run a
command (drover.control) and append its events; reads come from the projections; every read
carries X-Nomad-Index and supports blocking queries (?index=&wait=)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI

from drover.api import errors, ui
from drover.api.aclguard import guard_routes
from drover.api.aclresolve import AclResolver
from drover.api.blocking import Blocking, IndexWatcher
from drover.api.commands import Commands
from drover.api.encoded import Encoded
from drover.api.forward import ClientForwarder
from drover.api.fresh import Fresh
from drover.api.guard import RequestGuard
from drover.api.heartbeats import STATUSES_KEPT, Heartbeats
from drover.api.metrics import MetricsGatherer
from drover.api.nodeauth import NodeAuth
from drover.api.routeindex import indexed
from drover.api.routes import (
    acl,
    agent,
    allocations,
    client,
    clientfs,
    deployments,
    dispatch,
    evaluations,
    events,
    jobrestarts,
    jobs,
    jobversions,
    metrics,
    namespaces,
    nodepools,
    nodes,
    operator,
    parse,
    periodic,
    regions,
    scaling,
    scalingpolicies,
    search,
    services,
    status,
    system,
    variables,
)
from drover.api.servers import Servers
from drover.api.streamhub import StreamHub
from drover.runtime import pyheap
from drover.runtime.keyring import Keyring
from drover.runtime.loghead import LogHead
from drover.runtime.nodesecrets import NodeSecretHasher
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore, libpq_url
from drover.runtime.store.queries import Reads

ROUTERS = (
    jobs,
    parse,
    jobversions,
    scaling,
    scalingpolicies,
    jobrestarts,
    periodic,
    dispatch,
    services,
    allocations,
    evaluations,
    deployments,
    # Before nodes: /v1/node/{node_id} would take /v1/node/pools.
    nodepools,
    nodes,
    status,
    regions,
    agent,
    operator,
    system,
    client,
    clientfs,
    metrics,
    events,
    variables,
    namespaces,
    acl,
    search,
)


def create_app(settings: Settings, store: EventStore | None = None, *, tune_heap: bool = False) -> FastAPI:
    """The API. `tune_heap`: the process's cyclic collector set as the services set theirs
    (drover.runtime.pyheap), for the API's own process: the event stream's feed holds the
    cluster in memory, as a replica does."""
    store = store or EventStore(settings.database(), pool_size=10)
    reads = Reads(store)
    watcher = IndexWatcher(libpq_url(settings.database()), store)
    fresh = Fresh(LogHead(libpq_url(settings.database())), watcher.changes)
    heartbeats = Heartbeats(settings, reads, Fresh(fresh.head, watcher.changes, size=STATUSES_KEPT))
    metrics = MetricsGatherer(store, settings.nats_url, settings.nats_credentials())
    servers = Servers(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(watcher.run())
        stop = asyncio.Event()
        announcing = asyncio.create_task(servers.announce(stop))
        if tune_heap:
            pyheap.tune()
            heap_upkeep = asyncio.create_task(pyheap.maintain(stop))
        yield
        stop.set()
        task.cancel()
        # Marked left when NATS answers; a stop never waits long on it, and not at all while
        # NATS is out of reach (the announcer is then still trying to connect).
        if not (await asyncio.wait([announcing], timeout=2.0 if servers.connected() else 0.05))[0]:
            announcing.cancel()
        await servers.close()
        if tune_heap:
            await heap_upkeep
        await heartbeats.close()
        await fresh.close()
        await metrics.close()
        await app.state.stream.close()
        await app.state.client_forwarder.aclose()
        store.close()

    app = FastAPI(title="Drover", version="0.1.0", lifespan=lifespan)
    indexed(app.router)
    app.state.settings = settings
    app.state.reads = reads
    app.state.watcher = watcher
    app.state.blocking = Blocking(reads, watcher, fresh)
    app.state.encoded = Encoded()
    app.state.commands = Commands(store, reads)
    app.state.keyring = Keyring.from_settings(settings)
    app.state.node_auth = NodeAuth(NodeSecretHasher.from_settings(settings), reads)
    app.state.acl = AclResolver(reads, app.state.keyring, watcher.changes, app.state.node_auth.hash)
    app.state.heartbeats = heartbeats
    app.state.servers = servers
    app.state.metrics = metrics
    app.state.stream = StreamHub(settings, store, settings.event_feed_idle, settings.event_coalesce)
    app.state.client_forwarder = ClientForwarder()
    errors.install(app)
    app.add_middleware(RequestGuard, limit=settings.max_body_bytes, observe=metrics.timings.observe)
    # The routers' routes themselves: an included router is matched through a wrapper on every
    # request, 5-10% of the API's CPU for a simple read (bench/requests.py); the app's router
    # tries only those a request's path may match (drover.api.routeindex). A job's ID may hold
    # slashes (a periodic or dispatched child's), so /v1/job/{job_id:path} would also match
    # /v1/job/<id>/summary: the routes ending in an ID go last, and the path after the ID is read
    # first, as Nomad reads it.
    routes = [route for module in ROUTERS for route in module.router.routes]
    routes.sort(key=lambda route: str(getattr(route, "path", "")).endswith(":path}"))
    app.router.routes.extend(routes)
    if settings.acl_enabled:
        # Every route behind its entry of the ACL table (drover.api.access).
        app.router.routes[:] = guard_routes(app.router.routes, app.state.acl, settings.max_body_bytes)
        # The web console's pages (drover.api.ui), added the same way, each behind its sign-in.
        app.router.routes.extend(ui.routes(app.state.acl, app.state.keyring))
    else:
        app.router.routes.extend(ui.routes())
    ui.install(app)
    return app
