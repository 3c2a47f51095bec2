"""/v1/regions: the regions this cluster knows - its own (Drover runs one region)."""

from __future__ import annotations

from fastapi import APIRouter

from drover.api.deps import SettingsDep
from drover.api.jsondecode import JsonRoute

router = APIRouter(route_class=JsonRoute, tags=["regions"])


@router.get("/v1/regions")
async def regions(settings: SettingsDep) -> list[str]:
    return [settings.region]
