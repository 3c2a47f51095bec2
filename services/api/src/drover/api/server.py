"""Serving the API: uvicorn on uvloop and httptools, stopped without waiting out blocking
queries and event streams."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from drover.api import chunked
from drover.api.app import create_app
from drover.runtime.service import require_schema
from drover.runtime.settings import Settings
from drover.runtime.telemetry import setup_logging
from drover.runtime.tls import server_tls_problems, uvicorn_tls_options

# Seconds a stop waits for requests in flight before it cancels them.
GRACEFUL_STOP = 10


class Server(uvicorn.Server):
    """uvicorn's server, whose stop first answers the blocking queries: uvicorn waits for
    every request in flight, and a client agent's query on its node would otherwise hold the
    stop for up to its ?wait."""

    def __init__(self, config: uvicorn.Config, release: Callable[[], None]) -> None:
        super().__init__(config)
        self.release = release

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.release()
        await super().shutdown(sockets)


def uvicorn_config(app: ASGIApp, host: str, port: int, **options: Any) -> uvicorn.Config:
    """How the API is served (bench/requests.py serves its floors the same way). uvloop and
    httptools rather than asyncio's loop and h11 (uvicorn's pure-Python parser): every request
    and every NOTIFY the blocking queries wait on costs less CPU. No access log."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        loop="uvloop",
        http="httptools",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_STOP,
        **options,
    )


def main() -> None:
    setup_logging("api")
    settings = Settings()
    if problems := server_tls_problems(settings):
        logging.getLogger("drover.api").error("TLS settings: %s", "; ".join(problems))
        raise SystemExit(2)
    require_schema("api", settings)
    chunked.install()
    app = create_app(settings, tune_heap=True)
    config = uvicorn_config(app, settings.api_host, settings.api_port, **uvicorn_tls_options(settings))

    def release() -> None:
        app.state.watcher.release()
        app.state.stream.release()

    Server(config, release).run()
