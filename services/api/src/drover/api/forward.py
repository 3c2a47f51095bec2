"""Forwarding to the agent that holds an alloc, as Nomad's servers forward client requests:
the API finds the alloc's node and reaches the agent at the node's HTTPAddr, where the agent
serves what only it has (its allocs' logs). The API passes the answer's bytes on as they come."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

import httpx

from drover.api.errors import ApiError
from drover.runtime.store.queries import Reads

# A follower waits for bytes indefinitely (the agent sends a heartbeat frame every second
# unless plain); a one-off read gives the agent this long between bytes.
READ_TIMEOUT = 30.0


class ClientForwarder:
    """One HTTP client shared by every forwarded request."""

    def __init__(self) -> None:
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(READ_TIMEOUT, connect=5.0))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def node_address(self, reads: Reads, alloc_id: str) -> str:
        """The HTTPAddr of the agent running the alloc; 404 for an unknown alloc, and a clear
        refusal when its node serves nothing (a simulated node) or is gone."""
        alloc = await asyncio.to_thread(reads.alloc, alloc_id)
        if alloc is None:
            raise ApiError(404, f"alloc not found: {alloc_id}")
        node = await asyncio.to_thread(reads.node, alloc.node_id)
        if node is None:
            raise ApiError(404, f"node {alloc.node_id} of alloc {alloc_id} not found")
        if not node.http_addr:
            raise ApiError(
                501,
                f"node {node.id} ({node.name}) serves no logs: it registered no HTTPAddr "
                "(a simulated node, drover sim, runs no real tasks)",
            )
        return node.http_addr

    async def stream(
        self, address: str, path: str, params: Mapping[str, str], follow: bool
    ) -> AsyncIterator[bytes]:
        """The agent's answer to GET `path`, body bytes as they arrive; an agent's refusal is
        raised as it said it (status and text), an unreachable agent as a 502."""
        timeout = httpx.Timeout(None if follow else READ_TIMEOUT, connect=5.0)
        request = self.http.build_request("GET", f"http://{address}{path}", params=params, timeout=timeout)
        try:
            response = await self.http.send(request, stream=True)
        except httpx.HTTPError as e:
            raise ApiError(
                502, f"the node's agent at {address} cannot be reached: {e or type(e).__name__}"
            ) from e
        if response.status_code != 200:
            text = (await response.aread()).decode(errors="replace").strip()
            await response.aclose()
            raise ApiError(response.status_code, text or f"the node's agent answered {response.status_code}")
        return _body(response)


async def _body(response: httpx.Response) -> AsyncIterator[bytes]:
    try:
        with contextlib.suppress(httpx.HTTPError):  # the agent went away: the stream ends
            async for data in response.aiter_raw():
                yield data
    finally:
        await response.aclose()
