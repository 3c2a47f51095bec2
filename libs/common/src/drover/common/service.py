"""The shell every asyncio service shares: logging and tracing, settings from the environment,
garbage-collector tuning, and a stop event set by SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

from drover.common import gctune
from drover.common.settings import Settings
from drover.common.telemetry import setup_logging

ServiceMain = Callable[[Settings, asyncio.Event], Awaitable[None]]


def run_service(name: str, run: ServiceMain) -> None:
    setup_logging(name)
    settings = Settings()
    stop = asyncio.Event()

    async def amain() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        gctune.tune()
        gc_task = asyncio.create_task(gctune.maintain(stop))
        try:
            await run(settings, stop)
        finally:
            stop.set()
            await gc_task

    asyncio.run(amain())
