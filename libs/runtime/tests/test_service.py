"""The services' event loop."""

from __future__ import annotations

import asyncio

import uvloop

from drover.runtime.service import run_loop


def test_services_run_on_uvloop() -> None:
    async def loop_type() -> type:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop())

    assert run_loop(loop_type()) is uvloop.Loop
