"""/v1/agent: this API server as Nomad's agent - its configuration, member and statistics
(`self`), the cluster's servers (`members`), its health, and the server-membership requests
(`join`, `force-leave`). Drover's API is a server agent without a client: the client-only
requests (`servers`) answer 501 as a Nomad server does."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from nats.errors import Error as NatsError

from drover.api.deps import ReadsDep, ServersDep, SettingsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.servers import agent_config, agent_stats, leader_addr
from drover.runtime.members import STATUS_ALIVE

router = APIRouter(route_class=JsonRoute, tags=["agent"])


@router.get("/v1/agent/self")
async def agent_self(settings: SettingsDep, servers: ServersDep, reads: ReadsDep) -> dict[str, Any]:
    member_list = await servers.members()
    index = await asyncio.to_thread(reads.index)
    return {
        "config": agent_config(settings),
        "member": {**servers.record, "Status": STATUS_ALIVE},
        "stats": agent_stats(member_list, index, leader_addr(settings)),
    }


@router.get("/v1/agent/members")
async def agent_members(settings: SettingsDep, servers: ServersDep) -> dict[str, Any]:
    """Nomad's ServerMembersResponse: this server's name, region and datacenter, and every
    server member (alive, failed or left)."""
    return {
        "ServerName": servers.record["Name"],
        "ServerRegion": settings.region,
        "ServerDC": settings.datacenter,
        "Members": await servers.members(),
    }


@router.get("/v1/agent/health")
async def agent_health(servers: ServersDep, type: Annotated[list[str] | None, Query()] = None) -> Response:
    """{"server": {"ok": true, "message": "ok"}} while this server can do its work; 500 with the
    same document, naming the backing server that cannot be reached, when it cannot (Nomad
    answers an unhealthy agent so). `?type=client` asks for a client this agent does not run."""
    asked = type or []
    health: dict[str, dict[str, Any]] = {}
    if "client" in asked:
        health["client"] = {"ok": False, "message": "client not enabled"}
    if not asked or "server" in asked:
        problem = await servers.health()
        health["server"] = {"ok": not problem, "message": problem or "ok"}
    body = json.dumps(health)
    ok = all(h["ok"] for h in health.values())
    return Response(
        body, status_code=200 if ok else 500, media_type="application/json" if ok else "text/plain"
    )


@router.put("/v1/agent/join")
@router.post("/v1/agent/join")
async def agent_join(
    servers: ServersDep, address: Annotated[list[str] | None, Query()] = None
) -> dict[str, Any]:
    """Drover's servers find each other through NATS, never by joining: an address of a known
    server counts as joined, any other is named in the error."""
    if not address:
        raise ApiError(400, "missing address to join")
    found = await servers.members()
    known = {m["Addr"] for m in found} | {f"{m['Addr']}:{m['Port']}" for m in found}
    unknown = [a for a in address if a not in known]
    error = (
        f"{', '.join(unknown)}: not a Drover server; servers join by sharing NATS and PostgreSQL"
        if unknown
        else ""
    )
    return {"num_joined": len(address) - len(unknown), "error": error, "warning": ""}


@router.put("/v1/agent/force-leave")
@router.post("/v1/agent/force-leave")
async def agent_force_leave(servers: ServersDep, node: str = "", prune: bool = False) -> Response:
    """Mark a failed server as left (with `prune`, forget it); a live one stays, as in Nomad."""
    if not node:
        raise ApiError(400, "missing node to force leave")
    try:
        await servers.force_leave(node, prune=prune)
    except (OSError, TimeoutError, NatsError) as e:
        raise ApiError(503, f"NATS unreachable: {str(e) or type(e).__name__}") from e
    return Response(status_code=200)


@router.get("/v1/agent/servers")
@router.put("/v1/agent/servers")
@router.post("/v1/agent/servers")
async def agent_servers() -> Response:
    """A client agent's server list: this agent runs no client (Nomad's server answers 501)."""
    raise ApiError(501, "Invalid method")
