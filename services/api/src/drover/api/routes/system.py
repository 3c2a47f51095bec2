"""/v1/system/gc: force a garbage collection (Nomad's System.GarbageCollect)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Response

from drover.api.deps import CommandsDep
from drover.api.jsondecode import JsonRoute
from drover.control.commands import system

router = APIRouter(route_class=JsonRoute, tags=["system"])


@router.put("/v1/system/gc")
@router.post("/v1/system/gc")
async def force_gc(commands: CommandsDep) -> Response:
    """Append a force-gc core eval for the collector and answer at once, as Nomad does: 200
    with no body (the collection runs on)."""
    await commands.run(lambda reads: system.force_gc(time.time_ns()), span="system.gc")
    return Response(status_code=200)
