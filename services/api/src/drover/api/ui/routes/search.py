"""/ui/search?q=: the header's search box. Nomad's fuzzy search (drover.api.search) over
names - jobs, their groups, tasks, services and images, allocs, nodes, node pools,
namespaces, variables - and ID prefixes (evals, deployments, and allocs, nodes and jobs by ID
too, for a pasted ID), grouped by context, each match a link to its console page. The console
looks through more of each context than Nomad's API does by default (its search.limit_query
of 20): a search box that misses the 21st job is of little use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request, Response

from drover.api import search
from drover.api.deps import ReadsDep
from drover.api.errors import ApiError
from drover.api.routes.search import caller
from drover.api.ui import access
from drover.api.ui.render import Context, Fragment, job_ref, page
from drover.model.namespace import ALL_NAMESPACES
from drover.runtime.store.queries import Reads

router = APIRouter()

LIMIT_QUERY = 500
# The order the page shows the contexts in, and what each is called there.
SHOWN = {"jobs": "Jobs", "groups": "Task groups", "tasks": "Tasks", "services": "Services", "images": "Images",
         "commands": "Commands", "classes": "Classes", "allocs": "Allocations", "nodes": "Clients",
         "node_pools": "Node pools", "evals": "Evaluations", "deployment": "Deployments",
         "namespaces": "Namespaces", "vars": "Variables", "scaling_policy": "Scaling policies"}  # fmt: skip
# Pasted IDs: the contexts whose fuzzy search looks at names, searched by ID prefix too.
BY_ID = ("jobs", "allocs", "nodes")


@dataclass(frozen=True)
class Hit:
    label: str
    href: str = ""
    detail: str = ""


def _job_link(ns: str, job_id: str) -> str:
    return "/ui/jobs/" + quote(job_ref(ns, job_id), safe="/@")


def _hit(reads: Reads, ctx: str, match: Mapping[str, Any]) -> Hit:
    """A match with the console page it links to (none for what has no page)."""
    mid, scope = str(match["ID"]), [str(s) for s in match.get("Scope", [])]
    if ctx == "jobs":
        return Hit(mid, _job_link(scope[0], scope[1]), scope[0])
    if ctx in ("groups", "tasks", "services", "images", "commands", "classes"):
        return Hit(mid, _job_link(scope[0], scope[1]), " / ".join(scope[1:]) + f" in {scope[0]}")
    if ctx == "allocs":
        return Hit(mid, f"/ui/allocations/{quote(scope[1])}", scope[1][:8])
    if ctx == "nodes":
        return Hit(mid, f"/ui/nodes/{quote(scope[0])}")
    if ctx == "namespaces":
        return Hit(mid, "/ui/jobs?" + urlencode({"namespace": mid}))
    if ctx == "evals" and (ev := reads.eval(mid)) is not None:
        query = urlencode({"q": ev.job_id, "namespace": ev.namespace})
        return Hit(mid, f"/ui/evaluations?{query}", f"job {ev.job_id}, {ev.status}")
    if ctx == "deployment" and (dep := reads.deployment(mid)) is not None:
        return Hit(mid, _job_link(dep.namespace, dep.job_id), f"job {dep.job_id}, {dep.status}")
    if ctx == "node_pools":
        return Hit(mid, "/ui/nodes")
    return Hit(mid, "", " / ".join(scope))


def _results(reads: Reads, args: Mapping[str, Any]) -> Context:
    text, who = args["q"], args["caller"]
    if len(text) < search.MIN_TERM_LENGTH:
        return {"groups": [], "problem": "", "truncated": []}
    try:
        found = search.fuzzy_search(reads, who, ALL_NAMESPACES, text, "all", limit_query=LIMIT_QUERY)
    except ApiError as e:
        return {"groups": [], "problem": e.message, "truncated": []}
    matches: dict[str, list[Mapping[str, Any]]] = dict(found["Matches"])
    ids = search.prefix_search(reads, who, ALL_NAMESPACES, text, "all")["Matches"]
    for ctx in BY_ID:
        by_name = {m["ID"] for m in matches.get(ctx, [])}
        for object_id in ids.get(ctx) or []:
            if object_id not in by_name:
                matches.setdefault(ctx, []).append(_by_id(reads, ctx, object_id))
    groups = [(SHOWN[c], [_hit(reads, c, m) for m in matches[c]]) for c in SHOWN if matches.get(c)]
    truncated = [SHOWN[c] for c, more in found["Truncations"].items() if more and c in SHOWN]
    return {"groups": groups, "problem": "", "truncated": truncated}


def _by_id(reads: Reads, ctx: str, object_id: str) -> dict[str, Any]:
    """A prefix match of an ID in the fuzzy match's shape (the name shown, the Scope linked)."""
    if ctx == "allocs" and (alloc := reads.alloc(object_id)) is not None:
        return {"ID": alloc.name, "Scope": [alloc.namespace, alloc.id]}
    if ctx == "nodes" and (node := reads.node(object_id)) is not None:
        return {"ID": node.name or node.id, "Scope": [node.id]}
    return {"ID": object_id, "Scope": ["default", object_id]}


RESULTS = [Fragment("results", "fragments/search.html", _results, lambda c: [])]


@router.get("/ui/search", include_in_schema=False)
async def search_page(request: Request, reads: ReadsDep, q: str = "") -> Response:
    args = {"q": q.strip(), "caller": caller(request), "min_length": search.MIN_TERM_LENGTH}
    # What it finds is what the token may read (`caller`): shared by the requests of one token.
    return await page(
        request, reads, "search.html", RESULTS, args, title="Search", vary=access.token_key(request)
    )
