"""/v1/search and /v1/search/fuzzy: Nomad's prefix and fuzzy search (drover.api.search), for
the CLI's ID prefixes and the console's search box. Any token may ask; what it finds is what
its ACL lets it read, as Nomad's search shows. A blocking query (?index=) as Nomad's is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api import search
from drover.api.aclguard import identity
from drover.api.deps import BlockingDep
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import FuzzySearchRequest, SearchRequest
from drover.model.namespace import DEFAULT_NAMESPACE
from drover.runtime.watches import NAMESPACES_KEY, NODE_POOLS_KEY, list_keys

router = APIRouter(route_class=JsonRoute, tags=["search"])


def _namespace(request: Request, body_namespace: str) -> str:
    """?namespace= first, then the body's Namespace, as Nomad's agent parses a search."""
    return request.query_params.get("namespace") or body_namespace or DEFAULT_NAMESPACE


def caller(request: Request) -> search.Caller:
    who = identity(request)
    return search.Caller(None if who is None else who.acl)


def _keys(namespace: str) -> list[str]:
    """What a search reads, for a blocking search (?index=) to wait on, as Nomad's waits on the
    tables of its contexts."""
    tables = ("jobs", "allocs", "evals", "deployments", "variables")
    return [*(k for t in tables for k in list_keys(t, namespace)), "nodes", NODE_POOLS_KEY, NAMESPACES_KEY]


async def _answer(
    request: Request, blocking: BlockingDep, namespace: str, run: Callable[[], dict[str, Any]]
) -> Response:
    def read() -> tuple[int, dict[str, Any]]:
        index = blocking.reads.index()
        return index, {**run(), "Index": index, "LastContact": 0, "KnownLeader": True, "NextToken": ""}

    return await blocking.read_at(request, read, _keys(namespace))


@router.put("/v1/search")
@router.post("/v1/search")
async def prefix_search(request: Request, body: SearchRequest, blocking: BlockingDep) -> Response:
    """IDs starting with Prefix, up to 20 per context (Truncations: there were more)."""
    ns, who, reads = _namespace(request, body.namespace), caller(request), blocking.reads
    search.contexts(body.context, who, ns)  # a bad context refused before a blocking search waits

    def run() -> dict[str, Any]:
        return search.prefix_search(reads, who, ns, body.prefix, body.context)

    return await _answer(request, blocking, ns, run)


@router.put("/v1/search/fuzzy")
@router.post("/v1/search/fuzzy")
async def fuzzy_search(request: Request, body: FuzzySearchRequest, blocking: BlockingDep) -> Response:
    """Names holding Text (2 characters at least), with the Scope each is found in."""
    ns, who, reads = _namespace(request, body.namespace), caller(request), blocking.reads
    search.check_text(body.text)
    search.contexts(body.context, who, ns)

    def run() -> dict[str, Any]:
        return search.fuzzy_search(reads, who, ns, body.text, body.context)

    return await _answer(request, blocking, ns, run)
