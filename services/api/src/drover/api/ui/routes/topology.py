"""/ui/topology: every client as a box filled by its allocs' CPU and memory, by datacenter and
node pool, the cluster's totals on top (Nomad's topology visualization).

Drawn from the process's `Topology` (drover.api.ui.topology), read only where the log moved.
Live by group: each datacenter/pool group is a fragment of its own, re-fetched when an alloc or
node event arrives (at most once a second, as every fragment); the fragment's URL carries the
version it shows, and a group that did not change answers 204 - htmx swaps nothing, so an
alloc moving in one datacenter redraws that group alone, not 5,000 nodes. A change in the set
of groups reloads the page (HX-Refresh).

With ACLs on, the drawing is one for every tab: only a token that may read clients and every
namespace's jobs sees it."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from drover.api.deps import ReadsDep
from drover.api.ui import access
from drover.api.ui.render import ENV, base_context, denied, finish
from drover.api.ui.topology import Group, GroupView, Topology, groups_key

router = APIRouter()

TOPICS = "Allocation:* Node:*"
# Boxes per chunk: a chunk off screen is neither laid out nor painted (content-visibility).
CHUNK = 120


def _topology(request: Request) -> Topology:
    state = request.app.state
    if not hasattr(state, "ui_topology"):
        state.ui_topology = Topology()
    topology: Topology = state.ui_topology
    return topology


def _wrap(name: str, url: str, inner: str) -> str:
    return ENV.get_template("fragment.html").render(name=name, url=url, topics=TOPICS, inner=Markup(inner))


def _group(topology: Topology, g: Group, version: int) -> str:
    """The group's fragment: as drawn at this version, or drawn now (empty if it is gone)."""
    return topology.draw(g, version, lambda: "".join(_draw_group(view) for view in topology.groups(g)))


def _draw_group(view: GroupView) -> str:
    url = "/ui/topology?" + urlencode({"fragment": "group", "dc": view.group[0], "pool": view.group[1],
                                       "v": view.version})  # fmt: skip
    chunks = [Markup("".join(view.boxes[i : i + CHUNK])) for i in range(0, len(view.boxes), CHUNK)]
    inner = ENV.get_template("fragments/topology_group.html").render(view=view, chunks=chunks)
    return _wrap(view.id, url, inner)


def _totals(topology: Topology) -> str:
    return topology.draw(None, topology.latest, lambda: _draw_totals(topology))


def _draw_totals(topology: Topology) -> str:
    total, groups, counts = topology.totals()
    url = "/ui/topology?" + urlencode({"fragment": "totals", "groups": groups_key(groups)})
    inner = ENV.get_template("fragments/topology_totals.html").render(
        total=total, counts=counts, groups=len(groups)
    )
    return _wrap("totals", url, inner)


@router.get("/ui/topology", include_in_schema=False)
async def topology_page(
    request: Request, reads: ReadsDep, fragment: str = "", dc: str = "", pool: str = "", v: str = "",
    groups: str = "", at: str = "",
) -> Response:  # fmt: skip
    if not access.may(request, access.NODE_READ) or not await access.reads_everything(request):
        # One drawing for every tab, of every namespace's allocs: no token's share of it.
        return denied(request, "The topology shows every namespace's allocations on every client: it needs "
                      "node:read and read-job in every namespace.")  # fmt: skip
    topology = _topology(request)
    woke = int(at) if at.isascii() and at.isdigit() else None
    await asyncio.to_thread(topology.sync, reads, woke)
    if fragment == "group":
        version = topology.version((dc, pool))
        if version is None:  # the group is gone: the page is redrawn whole
            return finish(request, Response(status_code=204, headers={"HX-Refresh": "true"}))
        if v == str(version):
            return finish(request, Response(status_code=204))
        html = await asyncio.to_thread(lambda: _group(topology, (dc, pool), version))
        return finish(
            request, HTMLResponse(html) if html else Response(status_code=204, headers={"HX-Refresh": "true"})
        )
    if fragment == "totals":
        if groups != groups_key([g for g, _ in topology.listing()]):
            return finish(request, Response(status_code=204, headers={"HX-Refresh": "true"}))
        return finish(request, HTMLResponse(_totals(topology)))
    if fragment:
        return finish(request, HTMLResponse("unknown fragment", status_code=404))

    def draw() -> str:
        parts = [_group(topology, g, version) for g, version in topology.listing()]
        ctx = {**base_context(request), "title": "Topology", "index": max(topology.at, 0),
               "totals": Markup(_totals(topology)), "groups": Markup("".join(parts))}  # fmt: skip
        return ENV.get_template("topology.html").render(ctx)

    return finish(request, HTMLResponse(await asyncio.to_thread(draw)))
