"""/v1/namespaces and /v1/namespace/:name: Nomad's namespace catalogue. `default` exists from
the start and cannot be deleted; neither can a namespace that still holds jobs not dead,
allocs not terminal or variables. Reads are blocking queries on the catalogue."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep, CommandsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered
from drover.api.requestmodels import NamespaceRequest
from drover.control.commands import namespaces
from drover.model.namespace import Namespace
from drover.runtime.watches import NAMESPACES_KEY, namespace_key

router = APIRouter(route_class=JsonRoute, tags=["namespaces"])


def _written(index: int) -> Response:
    """A write's answer, as Nomad's: null, and the index it was written at."""
    return Response(content="null", media_type="application/json", headers={"X-Nomad-Index": str(index)})


@router.get("/v1/namespaces")
async def list_namespaces(request: Request, blocking: BlockingDep, prefix: str = "") -> Response:
    keep = filtered(request)
    return await blocking.read(request, lambda: keep(blocking.reads.namespaces(prefix)), [NAMESPACES_KEY])


@router.get("/v1/namespace/{name}")
async def read_namespace(name: str, request: Request, blocking: BlockingDep) -> Response:
    def fn() -> Namespace:
        ns = blocking.reads.namespace(name)
        if ns is None:
            raise ApiError(404, "Namespace not found")
        return ns

    return await blocking.read(request, fn, [namespace_key(name)])


async def _upsert(commands: CommandsDep, body: NamespaceRequest) -> Response:
    ns = Namespace.model_validate(body.model_dump(by_alias=True))
    _, positions = await commands.run(lambda reads: namespaces.upsert(reads, ns), what=f"namespace {ns.name}")
    return _written(positions[-1])


@router.put("/v1/namespace")
@router.post("/v1/namespace")
async def create_namespace(body: NamespaceRequest, commands: CommandsDep) -> Response:
    """A namespace named in its body (Nomad's API client writes them so)."""
    return await _upsert(commands, body)


@router.put("/v1/namespace/{name}")
@router.post("/v1/namespace/{name}")
async def write_namespace(name: str, body: NamespaceRequest, commands: CommandsDep) -> Response:
    if body.name != name:
        raise ApiError(400, "Namespace name does not match request path")
    return await _upsert(commands, body)


@router.delete("/v1/namespace/{name}")
async def delete_namespace(name: str, commands: CommandsDep) -> Response:
    _, positions = await commands.run(lambda reads: namespaces.delete(reads, name))
    return _written(positions[-1])
