"""/v1/status: the cluster's leader (the API this client talks to)."""

from __future__ import annotations

from fastapi import APIRouter

from drover.api.deps import SettingsDep
from drover.api.jsondecode import JsonRoute

router = APIRouter(route_class=JsonRoute, tags=["status"])


@router.get("/v1/status/leader")
async def leader(settings: SettingsDep) -> str:
    return f"{settings.api_host}:{settings.api_port}"
