"""/v1/status: the cluster's leader (the API this client talks to) and its raft peers (the
live API servers, drover.api.servers)."""

from __future__ import annotations

from fastapi import APIRouter

from drover.api.deps import ServersDep, SettingsDep
from drover.api.jsondecode import JsonRoute
from drover.api.servers import leader_addr

router = APIRouter(route_class=JsonRoute, tags=["status"])


@router.get("/v1/status/leader")
async def leader(settings: SettingsDep) -> str:
    return leader_addr(settings)


@router.get("/v1/status/peers")
async def peers(servers: ServersDep) -> list[str]:
    return await servers.peers()
