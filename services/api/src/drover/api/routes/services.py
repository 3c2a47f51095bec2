"""Native service discovery (services of provider "nomad"): /v1/services, /v1/service/:name,
a job's and an alloc's services, and the route clients register them through
(/v1/drover/services). Every read is a blocking query on the registrations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep, CommandsDep, ReadsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered
from drover.api.nodeauth import NodeCallerDep
from drover.api.requestmodels import ServicesRequest
from drover.api.routes.clientfs import ForwarderDep
from drover.control.commands import services
from drover.model.serviceregistration import choose, list_stubs, parse_choose, with_tag
from drover.runtime.watches import SERVICES_KEY

router = APIRouter(route_class=JsonRoute, tags=["services"])
ALL_NAMESPACES = "*"


def _namespace(namespace: str) -> str | None:
    return None if namespace == ALL_NAMESPACES else namespace


@router.get("/v1/services")
async def list_services(request: Request, blocking: BlockingDep, namespace: str = "default") -> Response:
    """Each namespace's service names with the union of their tags (`?namespace=*`: all)."""
    keep = filtered(request)
    return await blocking.read(
        request, lambda: keep(list_stubs(blocking.reads.services(_namespace(namespace)))), [SERVICES_KEY]
    )


@router.get("/v1/service/{name}")
async def read_service(
    name: str, request: Request, blocking: BlockingDep, namespace: str = "default", tag: str = ""
) -> Response:
    """The service's registrations, those with `?tag=` only; `?choose=<n>|<key>` picks n of
    them by rendezvous hashing on the key, as Nomad does."""
    param = request.query_params.get("choose", "")
    picked: tuple[int, str] | None = None
    if param:
        try:
            picked = parse_choose(param)
        except ValueError as e:
            raise ApiError(400, f"failed to choose services: {e}") from e

    def fn() -> Any:
        regs = with_tag(blocking.reads.services(_namespace(namespace), name=name), tag)
        return choose(regs, *picked) if picked is not None else regs

    return await blocking.read(request, fn, [SERVICES_KEY])


@router.delete("/v1/service/{name}/{service_id}")
async def delete_service(
    name: str, service_id: str, commands: CommandsDep, namespace: str = "default"
) -> Response:
    _, positions = await commands.run(lambda reads: services.delete(reads, namespace, name, service_id))
    return Response(
        content="null", media_type="application/json", headers={"X-Nomad-Index": str(positions[-1])}
    )


@router.get("/v1/job/{job_id:path}/services")
async def job_services(
    job_id: str, request: Request, blocking: BlockingDep, namespace: str = "default"
) -> Response:
    """The registrations of the job's allocs (404 for an unknown job)."""

    def fn() -> Any:
        if not blocking.reads.job_exists(namespace, job_id):
            return None
        return blocking.reads.services(namespace, job_id=job_id)

    return await blocking.read(request, fn, [SERVICES_KEY])


@router.get("/v1/allocation/{alloc_id}/services")
async def alloc_services(alloc_id: str, request: Request, blocking: BlockingDep) -> Response:
    """The registrations of the alloc's services (404 for an unknown alloc)."""

    def fn() -> Any:
        alloc = blocking.reads.alloc(alloc_id)
        if alloc is None:
            return None
        return blocking.reads.services(alloc.namespace, alloc_id=alloc_id)

    return await blocking.read(request, fn, [SERVICES_KEY])


@router.get("/v1/client/allocation/{alloc_id}/checks")
async def alloc_checks(alloc_id: str, reads: ReadsDep, forwarder: ForwarderDep) -> Response:
    """The latest result of each of the alloc's nomad service checks, by check ID, from the
    agent running it (Nomad's client endpoint)."""
    address = await forwarder.node_address(reads, alloc_id)
    chunks = await forwarder.stream(address, f"/v1/client/allocation/{alloc_id}/checks", {}, False)
    return Response(content=b"".join([c async for c in chunks]), media_type="application/json")


@router.put("/v1/drover/services")
@router.post("/v1/drover/services")
async def client_services(
    body: ServicesRequest, caller: NodeCallerDep, commands: CommandsDep
) -> dict[str, Any]:
    """A client registers its allocs' services and removes those of allocs that stopped: the
    reporting node, each registration's node and alloc, and each removed registration's node
    must be the caller's (its node secret: drover.api.nodeauth)."""
    await caller.require_registered()
    named = {body.node_id} | {r.node_id for r in body.services}
    await caller.require_nodes(sorted(n for n in named if n))
    await caller.require_allocs({r.alloc_id for r in body.services if r.alloc_id})
    await caller.require_services(set(body.deregister))
    if not body.services and not body.deregister:
        return {"Index": 0}
    _, positions = await commands.run(
        lambda reads: services.register(reads, body.node_id, body.services, body.deregister)
    )
    return {"Index": positions[-1]}
