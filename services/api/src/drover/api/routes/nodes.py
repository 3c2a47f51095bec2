"""/v1/nodes and /v1/node/:id: reads, eligibility, drain and purge."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.blocking import Blocking
from drover.api.deps import BlockingDep, CommandsDep
from drover.api.encoded import Encoded
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered, filtered_paged
from drover.api.requestmodels import NodeDrainRequest, NodeEligibilityRequest
from drover.api.views import as_json, node_stub
from drover.control.commands import nodes
from drover.model.node import DrainSpec
from drover.runtime.watches import node_key

router = APIRouter(route_class=JsonRoute, tags=["nodes"])


@router.get("/v1/nodes")
async def list_nodes(
    request: Request, blocking: BlockingDep, prefix: str = "", resources: bool = False, os: bool = False
) -> Response:
    """Node stubs; `resources` adds their NodeResources and ReservedResources, `os` their
    Attributes with os.name, as Nomad's do."""
    # ?filter= judges the whole node (as Nomad's does), with what its stub adds (Drain).
    fn = filtered_paged(
        request,
        lambda start, limit: blocking.reads.nodes(prefix, start=start, limit=limit),
        shape=lambda found: [node_stub(n, resources=resources, os=os) for n in found],
        subject=lambda node, stub: {**as_json(node), **stub},
    )
    return await blocking.read(request, fn, ["nodes"])


@router.get("/v1/node/{node_id}")
async def read_node(node_id: str, request: Request) -> Response:
    # The state from the app, not a dependency: FastAPI resolves one on every request.
    blocking: Blocking = request.app.state.blocking
    encoded: Encoded = request.app.state.encoded

    def read() -> tuple[int, bytes | None]:
        index, doc = blocking.reads.node_doc_at(node_id)
        return index, None if doc is None else encoded.node(doc)

    return await blocking.read_kept(request, node_key(node_id), read)


@router.get("/v1/node/{node_id}/allocations")
async def node_allocs(node_id: str, request: Request, blocking: BlockingDep) -> Response:
    keep = filtered(request)

    def fn() -> Any:
        if blocking.reads.node(node_id) is None:
            return None
        return keep(blocking.reads.allocs(node_id=node_id))

    return await blocking.read(request, fn, [node_key(node_id)])


def _answer(positions: list[int]) -> dict[str, Any]:
    index = positions[-1]
    return {"EvalIDs": [], "EvalCreateIndex": 0, "NodeModifyIndex": index, "Index": index}


@router.put("/v1/node/{node_id}/eligibility")
@router.post("/v1/node/{node_id}/eligibility")
async def node_eligibility(
    node_id: str, body: NodeEligibilityRequest, commands: CommandsDep
) -> dict[str, Any]:
    _, positions = await commands.run(lambda reads: nodes.set_eligibility(reads, node_id, body.eligibility))
    return _answer(positions)


@router.put("/v1/node/{node_id}/drain")
@router.post("/v1/node/{node_id}/drain")
async def node_drain(node_id: str, body: NodeDrainRequest, commands: CommandsDep) -> dict[str, Any]:
    """Start (DrainSpec) or cancel (DrainSpec null) a drain; the node drainer moves the allocs."""
    given = body.drain_spec
    spec = (
        None
        if given is None
        else DrainSpec(deadline=given.deadline, ignore_system_jobs=given.ignore_system_jobs)
    )
    _, positions = await commands.run(
        lambda reads: nodes.drain(reads, node_id, spec, body.mark_eligible, time.time_ns())
    )
    return _answer(positions)


@router.put("/v1/node/{node_id}/purge")
@router.post("/v1/node/{node_id}/purge")
async def node_purge(node_id: str, commands: CommandsDep) -> dict[str, Any]:
    """Deregister the node (Nomad's node purge), with node-update evals for its jobs."""
    change, positions = await commands.run(lambda reads: nodes.purge(reads, node_id, time.time_ns()))
    index = positions[-1]
    return {"EvalIDs": change.eval_ids, "EvalCreateIndex": index if change.evals else 0,
            "NodeModifyIndex": positions[0], "Index": index}  # fmt: skip
