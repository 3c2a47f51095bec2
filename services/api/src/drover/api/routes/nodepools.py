"""/v1/node/pools and /v1/node/pool/:name: node pools read, written and deleted, and a pool's
nodes and jobs, as Nomad's. The built-in `all` and `default` are listed and read, never
written or deleted; a pool with nodes, or with jobs that have not ended, is not deleted."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.blocking import Paged, paged, parse_per_page
from drover.api.deps import BlockingDep, CommandsDep, SettingsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered
from drover.api.requestmodels import NodePoolRequest
from drover.api.views import job_stub, node_stub
from drover.control.change import Change
from drover.control.commands import operator
from drover.model.nodepool import NodePool
from drover.runtime.store.queries import Reads
from drover.runtime.watches import NODE_POOLS_KEY

router = APIRouter(route_class=JsonRoute, tags=["node pools"])
_NOT_FOUND = "node pool not found"


@router.get("/v1/node/pools")
async def list_node_pools(request: Request, blocking: BlockingDep, prefix: str = "") -> Response:
    """The pools whose name starts with `prefix`, by name, paged as Nomad's (?per_page=,
    ?next_token= a name)."""

    keep = filtered(request)

    def fn() -> Paged:
        per_page = parse_per_page(request.query_params.get("per_page"))
        token = request.query_params.get("next_token", "")
        pools = keep([p for p in blocking.reads.node_pools(prefix) if p.name >= token])
        if per_page and len(pools) > per_page:
            return Paged(pools[:per_page], pools[per_page].name)
        return Paged(pools)

    return await blocking.read(request, fn, [NODE_POOLS_KEY])


async def _upsert(commands: CommandsDep, pool: NodePool) -> Response:
    def decide(reads: Reads) -> Change:
        _, version = reads.node_pool_at(pool.name)
        return operator.upsert_node_pool(pool, version)

    _, positions = await commands.run(decide, span="nodepool.upsert")
    return Response(status_code=200, headers={"X-Nomad-Index": str(positions[-1])})


@router.put("/v1/node/pools")
@router.post("/v1/node/pools")
async def upsert_node_pools(body: NodePoolRequest, commands: CommandsDep) -> Response:
    return await _upsert(commands, body.pool())


@router.get("/v1/node/pool/{name}")
async def read_node_pool(name: str, request: Request, blocking: BlockingDep) -> Response:
    def fn() -> NodePool:
        return _pool(blocking.reads, name)

    return await blocking.read(request, fn, [NODE_POOLS_KEY])


@router.put("/v1/node/pool/{name}")
@router.post("/v1/node/pool/{name}")
async def upsert_node_pool(name: str, body: NodePoolRequest, commands: CommandsDep) -> Response:
    if body.name != name:
        raise ApiError(400, "Node pool name does not match request path")
    return await _upsert(commands, body.pool())


@router.delete("/v1/node/pool/{name}")
async def delete_node_pool(name: str, commands: CommandsDep, settings: SettingsDep) -> Response:
    def decide(reads: Reads) -> Change:
        existing, version = reads.node_pool_at(name)
        has_nodes, has_jobs = reads.node_pool_in_use(name) if existing is not None else (False, False)
        return operator.delete_node_pool(
            name, existing, version, has_nodes=has_nodes, has_live_jobs=has_jobs, region=settings.region
        )

    _, positions = await commands.run(decide, span="nodepool.delete")
    return Response(status_code=200, headers={"X-Nomad-Index": str(positions[-1])})


def _pool(reads: Reads, name: str) -> NodePool:
    pool = reads.node_pool(name)
    if pool is None:
        raise ApiError(404, _NOT_FOUND)
    return pool


def _no_prefix(request: Request) -> None:
    # Ambiguous here (the pool's name, or its nodes' or jobs' IDs?): Nomad refuses it too.
    if request.query_params.get("prefix"):
        raise ApiError(400, "prefix argument not allowed")


@router.get("/v1/node/pool/{name}/nodes")
async def node_pool_nodes(
    name: str, request: Request, blocking: BlockingDep, resources: bool = False, os: bool = False
) -> Response:
    """The pool's node stubs (`all`: every node), paged by node ID as /v1/nodes."""
    _no_prefix(request)
    read = paged(request, lambda start, limit: blocking.reads.pool_nodes(name, start=start, limit=limit))

    def fn() -> Paged:
        _pool(blocking.reads, name)
        page = read()
        return Paged([node_stub(n, resources=resources, os=os) for n in page.items], page.next_token)

    return await blocking.read(request, fn, ["nodes", NODE_POOLS_KEY])


@router.get("/v1/node/pool/{name}/jobs")
async def node_pool_jobs(
    name: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    """The stubs of the jobs placed in the pool (`?namespace=*`: of every namespace)."""
    _no_prefix(request)

    def fn() -> list[dict[str, Any]]:
        _pool(blocking.reads, name)
        jobs = blocking.reads.pool_jobs(name, namespace)
        out = []
        for ns in dict.fromkeys(j.namespace for j in jobs):
            of_ns = [j for j in jobs if j.namespace == ns]
            summaries = blocking.reads.job_summaries(ns, of_ns)
            out += [job_stub(j, summaries[j.id]) for j in of_ns]
        return out

    return await blocking.read(request, fn, ["jobs", "allocs", "evals", NODE_POOLS_KEY])
