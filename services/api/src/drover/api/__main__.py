"""`drover-api`: serve the HTTP API (default 127.0.0.1:4646)."""

from __future__ import annotations

import uvicorn

from drover.api.app import create_app
from drover.common.settings import Settings
from drover.common.telemetry import setup_logging


def main() -> None:
    setup_logging("api")
    settings = Settings()
    # uvloop and httptools rather than asyncio's loop and h11 (uvicorn's pure-Python parser):
    # every request and every NOTIFY the blocking queries wait on costs less CPU.
    uvicorn.run(
        create_app(settings),
        host=settings.api_host,
        port=settings.api_port,
        log_level="warning",
        loop="uvloop",
        http="httptools",
    )


if __name__ == "__main__":
    main()
