"""Drover's endpoints for clients (/v1/drover/...): a node agent or the simulator registers
its nodes, heartbeats, reports node and alloc status, and follows the allocs of many nodes.
Each request carries the secret its nodes registered with (drover.api.nodeauth); these routes
take node secrets, never ACL tokens, as Nomad's client RPCs do."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.blocking import parse_index
from drover.api.commands import Commands
from drover.api.deps import BlockingDep, CommandsDep, HeartbeatsDep
from drover.api.errors import ApiError
from drover.api.heartbeats import Heartbeats
from drover.api.jsondecode import JsonRoute
from drover.api.nodeauth import NodeAuthDep, NodeCallerDep, caller_of
from drover.api.requestmodels import (
    AllocsStatusRequest,
    HeartbeatsRequest,
    NodeRegisterRequest,
    NodeStatusRequest,
)
from drover.api.views import alloc_stub
from drover.control.commands import allocs, nodes

router = APIRouter(route_class=JsonRoute, tags=["client"])


@router.put("/v1/drover/node/register")
@router.post("/v1/drover/node/register")
async def node_register(
    body: NodeRegisterRequest, commands: CommandsDep, heartbeats: HeartbeatsDep, auth: NodeAuthDep
) -> dict[str, Any]:
    """The secret is the body's (Node.SecretID): a node not registered yet has none to match.
    With ACLs enabled, Nomad's node introduction also wants an ACL token with node:write here
    (X-Nomad-Token, which registering leaves free): the ACL check goes in front of this."""
    change, positions = await commands.run(
        lambda reads: nodes.register(reads, body.node, body.secret_id, auth.hash, time.time_ns())
    )
    auth.registered(body.node.id, auth.hash(str(body.secret_id)))
    # Registering counts as a heartbeat: the heartbeater starts the node's clock when it sees the
    # registration in the log (with the longest TTL it could have been handed).
    ttl = await heartbeats.ttl()
    index = positions[-1]
    return {"NodeModifyIndex": index, "EvalIDs": change.eval_ids, "HeartbeatTTL": ttl, "Index": index}


async def _heartbeat(commands: Commands, heartbeats: Heartbeats, node_ids: list[str]) -> dict[str, Any]:
    """Heartbeats of `node_ids`: a node that was down or disconnected comes back (its status
    and evals, in the log); every one is passed on to the heartbeater."""
    change, index = await heartbeats.beat(commands, node_ids)
    ttls = [await heartbeats.ttl() for _ in node_ids]
    try:
        await heartbeats.publish(node_ids, ttls)
    except Exception as e:
        raise ApiError(503, f"heartbeat not delivered (NATS unreachable): {e}") from e
    return {
        "HeartbeatTTLs": dict(zip(node_ids, ttls, strict=True)),
        "EvalIDs": change.eval_ids,
        "Index": index,
    }


@router.put("/v1/drover/node/{node_id}/heartbeat")
@router.post("/v1/drover/node/{node_id}/heartbeat")
async def node_heartbeat(node_id: str, request: Request) -> Response:
    # The hottest request: its caller and the state taken here, not as dependencies (FastAPI
    # resolves each on every request), and its answer encoded here, not by FastAPI's encoder.
    caller = await caller_of(request)
    await caller.require_nodes([node_id])
    out = await _heartbeat(request.app.state.commands, request.app.state.heartbeats, [node_id])
    answer = {"HeartbeatTTL": out["HeartbeatTTLs"][node_id], "EvalIDs": out["EvalIDs"], "Index": out["Index"]}
    return Response(json.dumps(answer), media_type="application/json")


@router.put("/v1/drover/heartbeats")
@router.post("/v1/drover/heartbeats")
async def node_heartbeats(
    body: HeartbeatsRequest, caller: NodeCallerDep, commands: CommandsDep, heartbeats: HeartbeatsDep
) -> dict[str, Any]:
    node_ids = list(dict.fromkeys(body.node_ids))
    await caller.require_nodes(node_ids)
    return await _heartbeat(commands, heartbeats, node_ids)


@router.put("/v1/drover/node/{node_id}/status")
@router.post("/v1/drover/node/{node_id}/status")
async def node_status(
    node_id: str, body: NodeStatusRequest, caller: NodeCallerDep, commands: CommandsDep
) -> dict[str, Any]:
    await caller.require_nodes([node_id])
    change, positions = await commands.run(
        lambda reads: nodes.set_status(reads, node_id, body.status, time.time_ns())
    )
    index = positions[-1]
    return {"NodeModifyIndex": index, "EvalIDs": change.eval_ids, "Index": index}


@router.put("/v1/drover/allocs/status")
@router.post("/v1/drover/allocs/status")
async def allocs_status(
    body: AllocsStatusRequest, caller: NodeCallerDep, commands: CommandsDep
) -> dict[str, Any]:
    """The allocs' status as their client reports it: the reporting node (NodeID, an agent's)
    and the node of every alloc reported on must be the caller's."""
    await caller.require_registered()
    await caller.require_nodes([body.node_id] if body.node_id else [])
    await caller.require_allocs({u.id for u in body.updates})
    change, positions = await commands.run(
        lambda reads: allocs.client_update(reads, body.node_id, body.updates, time.time_ns())
    )
    return {"Index": positions[-1], "EvalIDs": change.eval_ids}


@router.get("/v1/drover/allocs/changes")
async def alloc_changes(
    request: Request, caller: NodeCallerDep, blocking: BlockingDep, node_prefix: str = ""
) -> Response:
    """Allocs changed after ?index= on the caller's nodes whose ID starts with ?node_prefix=
    (a blocking query): how a process hosting many nodes (drover sim) follows their allocs at
    once. Allocs of nodes the caller's secret is not for are left out."""
    since = parse_index(request.query_params.get("index"))
    await caller.require_registered()

    def read() -> list[dict[str, Any]]:
        changed = blocking.reads.alloc_changes(since, node_prefix)
        owned = caller.owned_now({a.node_id for a in changed})
        return [alloc_stub(a) for a in changed if a.node_id in owned]

    return await blocking.read(request, read, ["allocs"])
