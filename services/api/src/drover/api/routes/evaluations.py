"""/v1/evaluations, /v1/evaluations/count and /v1/evaluation/:id."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import BlockingDep
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered_paged, keep, query_filter
from drover.api.views import alloc_stub
from drover.model.namespace import ALL_NAMESPACES, DEFAULT_NAMESPACE
from drover.runtime.watches import eval_key, list_keys

router = APIRouter(route_class=JsonRoute, tags=["evaluations"])


@router.get("/v1/evaluations")
async def list_evals(
    request: Request, blocking: BlockingDep, prefix: str = "", namespace: str = DEFAULT_NAMESPACE
) -> Response:
    """The namespace's evals (`*`: every one's), by ID."""
    ns = None if namespace == ALL_NAMESPACES else namespace
    return await blocking.read(
        request,
        filtered_paged(
            request,
            lambda start, limit: blocking.reads.evals(namespace=ns, prefix=prefix, start=start, limit=limit),
        ),
        list_keys("evals", namespace),
    )


@router.get("/v1/evaluations/count")
async def count_evals(
    request: Request,
    blocking: BlockingDep,
    prefix: str = "",
    namespace: str = DEFAULT_NAMESPACE,
) -> Response:
    """Nomad's eval count: how many evals there are in the namespace ("*": every one) whose ID
    starts with `prefix` (and that pass ?filter=)."""
    f = query_filter(request)
    ns = None if namespace == ALL_NAMESPACES else namespace

    def count() -> dict[str, int]:
        if f is None:
            return {"Count": blocking.reads.eval_count(namespace, prefix)}
        return {"Count": len(keep(f, blocking.reads.evals(namespace=ns, prefix=prefix)))}

    return await blocking.read(request, count, list_keys("evals", namespace))


@router.get("/v1/evaluation/{eval_id}")
async def read_eval(eval_id: str, request: Request, blocking: BlockingDep) -> Response:
    return await blocking.read(request, lambda: blocking.reads.eval(eval_id), [eval_key(eval_id)])


@router.get("/v1/evaluation/{eval_id}/allocations")
async def eval_allocs(eval_id: str, request: Request, blocking: BlockingDep) -> Response:
    def fn() -> Any:
        eval_ = blocking.reads.eval(eval_id)
        if eval_ is None:
            return None
        # An eval's allocs are its job's: found by the job's index, filtered by the eval.
        allocs = blocking.reads.allocs(namespace=eval_.namespace, job_id=eval_.job_id, eval_id=eval_id)
        return [alloc_stub(a) for a in allocs]

    return await blocking.read(request, fn, [eval_key(eval_id)])
