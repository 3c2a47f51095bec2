"""/v1/operator: the scheduler configuration (read, set whole, or check-and-set with `?cas=`
as Nomad's) and the raft configuration Nomad's operators read (Drover's API servers are its
peers: drover.api.servers)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep, CommandsDep, ServersDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import SchedulerConfigRequest
from drover.control.commands import operator
from drover.runtime.members import STATUS_ALIVE
from drover.runtime.store.queries import Reads
from drover.runtime.watches import SCHEDULER_CONFIG_KEY

router = APIRouter(route_class=JsonRoute, tags=["operator"])


@router.get("/v1/operator/scheduler/configuration")
async def scheduler_configuration(request: Request, blocking: BlockingDep) -> Response:
    """Nomad's SchedulerConfigurationResponse; until one is set, Nomad's default at index 0."""

    def fn() -> dict[str, Any]:
        config = blocking.reads.scheduler_config()
        return {"SchedulerConfig": config.to_api(), "Index": config.modify_index, "LastContact": 0,
                "KnownLeader": True, "NextToken": ""}  # fmt: skip

    return await blocking.read(request, fn, [SCHEDULER_CONFIG_KEY])


@router.put("/v1/operator/scheduler/configuration")
@router.post("/v1/operator/scheduler/configuration")
async def set_scheduler_configuration(
    request: Request, body: SchedulerConfigRequest, commands: CommandsDep
) -> Response:
    """Set the configuration whole; with `?cas=<ModifyIndex>`, only if it is still at that
    index: {"Updated": false} otherwise, nothing written."""
    cas = _cas(request.query_params.get("cas"))
    config = body.config()

    def decide(reads: Reads) -> operator.ConfigChange:
        current, version = reads.stored_scheduler_config()
        return operator.set_scheduler_config(config, current, version, cas)

    change, positions = await commands.run(decide, span="operator.scheduler.set")
    index = positions[-1]
    return _json({"Updated": change.updated, "Index": index}, index)


def _cas(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or not value.isascii():
        raise ApiError(400, f"Error parsing cas value: {value!r} is not an unsigned integer")
    return int(value)


def _json(body: dict[str, Any], index: int) -> Response:
    return Response(json.dumps(body), media_type="application/json", headers={"X-Nomad-Index": str(index)})


@router.get("/v1/operator/raft/configuration")
async def raft_configuration(servers: ServersDep, blocking: BlockingDep) -> dict[str, Any]:
    """Nomad's RaftConfigurationResponse: every live API server a voter, this one the leader
    (each answers as the leader: /v1/status/leader)."""
    live = [m for m in await servers.members() if m["Status"] == STATUS_ALIVE]
    return {
        "Index": await asyncio.to_thread(blocking.reads.index),
        "Servers": [
            {
                "ID": m["Tags"].get("id", ""),
                "Node": m["Name"],
                "Address": f"{m['Addr']}:{m['Port']}",
                "Leader": m["Tags"].get("id") == servers.id,
                "Voter": True,
                "RaftProtocol": m["Tags"].get("raft_vsn", "3"),
            }
            for m in live
        ],
    }


@router.delete("/v1/operator/raft/peer")
async def remove_raft_peer(servers: ServersDep, address: str = "", id: str = "") -> Response:
    """Forget a server that is gone (failed or left); a live one leaves by stopping."""
    if not address and not id:
        raise ApiError(
            400, "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove"
        )
    if address and id:
        raise ApiError(
            400, "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove"
        )
    found = [
        m
        for m in await servers.members()
        if (id and m["Tags"].get("id") == id) or (address and f"{m['Addr']}:{m['Port']}" == address)
    ]
    if not found:
        raise ApiError(
            404, f"{'id' if id else 'address'} {id or address!r} was not found in the Raft configuration"
        )
    if any(m["Status"] == STATUS_ALIVE for m in found):
        raise ApiError(409, f"server {found[0]['Name']} is alive: it leaves the configuration when it stops")
    for m in found:
        await servers.force_leave(m["Name"], prune=True)
    return Response(status_code=200)
