"""/v1/search and /v1/search/fuzzy: Nomad's prefix and fuzzy search (drover.api.search), for
the CLI's ID prefixes and the console's search box. Any token may ask; what it finds is what
its ACL lets it read, as Nomad's search shows."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api import search
from drover.api.aclguard import identity
from drover.api.deps import ReadsDep
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import FuzzySearchRequest, SearchRequest
from drover.model.namespace import DEFAULT_NAMESPACE

router = APIRouter(route_class=JsonRoute, tags=["search"])


def _namespace(request: Request, body_namespace: str) -> str:
    """?namespace= first, then the body's Namespace, as Nomad's agent parses a search."""
    return request.query_params.get("namespace") or body_namespace or DEFAULT_NAMESPACE


def caller(request: Request) -> search.Caller:
    who = identity(request)
    return search.Caller(None if who is None else who.acl)


async def _answer(reads: ReadsDep, run: Callable[[], dict[str, Any]]) -> Response:
    def read() -> tuple[int, dict[str, Any]]:
        return reads.index(), run()

    index, found = await asyncio.to_thread(read)
    body = {**found, "Index": index, "LastContact": 0, "KnownLeader": True, "NextToken": ""}
    headers = {"X-Nomad-Index": str(index), "X-Nomad-KnownLeader": "true", "X-Nomad-LastContact": "0"}
    return Response(json.dumps(body), media_type="application/json", headers=headers)


@router.put("/v1/search")
@router.post("/v1/search")
async def prefix_search(request: Request, body: SearchRequest, reads: ReadsDep) -> Response:
    """IDs starting with Prefix, up to 20 per context (Truncations: there were more)."""
    ns, who = _namespace(request, body.namespace), caller(request)
    return await _answer(reads, lambda: search.prefix_search(reads, who, ns, body.prefix, body.context))


@router.put("/v1/search/fuzzy")
@router.post("/v1/search/fuzzy")
async def fuzzy_search(request: Request, body: FuzzySearchRequest, reads: ReadsDep) -> Response:
    """Names holding Text (2 characters at least), with the Scope each is found in."""
    ns, who = _namespace(request, body.namespace), caller(request)
    return await _answer(reads, lambda: search.fuzzy_search(reads, who, ns, body.text, body.context))
