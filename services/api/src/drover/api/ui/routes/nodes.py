"""/ui/nodes (the list, filtered and paged on the server) and /ui/nodes/<id> (a node and its
allocs), with eligibility and drain toggles running the commands their /v1 routes run. With
ACLs on, reading them needs `node:read`, and the toggles `node:write`, as the /v1 routes do."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import CommandsDep, ReadsDep
from drover.api.ui import access
from drover.api.ui.access import MayWriteNode
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields, flag
from drover.api.ui.render import Context, Fragment, act, back_to, denied, done, page
from drover.control.commands import nodes
from drover.model.durations import parse_duration
from drover.model.node import DrainSpec
from drover.runtime.store.queries import Reads

router = APIRouter()

PER_PAGE = 50
STATUSES = ("initializing", "ready", "down", "disconnected", "draining")
DEFAULT_DEADLINE = "1h"
NO_NODE_READ = "Your ACL token may not read clients (it lacks node:read)."


def _nodes(reads: Reads, args: Mapping[str, Any]) -> Context:
    found = reads.node_page(status=args["status"], eligibility=args["eligibility"], search=args["q"],
                            after=args["after"], before=args["before"], limit=PER_PAGE)  # fmt: skip
    return {"nodes": found}


LIST = [Fragment("nodes", "fragments/nodes.html", _nodes, lambda c: ["Node:*"])]


@router.get("/ui/nodes", include_in_schema=False)
async def node_list(
    request: Request, reads: ReadsDep, status: str = "", eligibility: str = "", q: str = "",
    after: str = "", before: str = "",
) -> Response:  # fmt: skip
    if not access.may(request, access.NODE_READ):
        return denied(request, NO_NODE_READ)
    args = {"status": status if status in STATUSES else "",
            "eligibility": eligibility if eligibility in ("eligible", "ineligible") else "",
            "q": q.strip(), "after": after, "before": before}  # fmt: skip
    return await page(request, reads, "nodes.html", LIST, args, title="Nodes", statuses=STATUSES)


def _node(reads: Reads, args: Mapping[str, Any]) -> Context | None:
    node = reads.node(args["node_id"])
    return None if node is None else {"node": node}


def _allocs(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"allocs": reads.alloc_page(namespace=args["within"], node_id=args["node_id"], status=args["alloc_status"],
                                       after=args["after"], before=args["before"], limit=PER_PAGE)}  # fmt: skip


NODE = [
    Fragment("node", "fragments/node.html", _node, lambda c: [f"Node:{c['node_id']}"]),
    # An alloc's events name its job and deployment, not its node: any alloc's change is looked
    # at (at most once a second).
    Fragment("allocations", "fragments/node_allocs.html", _allocs, lambda c: ["Allocation:*"]),
]


@router.get("/ui/nodes/{node_id}", include_in_schema=False)
async def node_page(
    node_id: str, request: Request, reads: ReadsDep, alloc_status: str = "", after: str = "", before: str = ""
) -> Response:
    if not access.may(request, access.NODE_READ):
        return denied(request, NO_NODE_READ)
    # Its allocs: those of the namespaces the token may read (as /v1/node/:id/allocations).
    within = await access.within(request)
    args = {
        "node_id": node_id,
        "alloc_status": alloc_status,
        "after": after,
        "before": before,
        "within": within,
    }
    return await page(request, reads, "node.html", NODE, args, title=f"Node {node_id[:8]}",
                      default_deadline=DEFAULT_DEADLINE, vary=repr(within))  # fmt: skip


def _back(request: Request, node_id: str) -> str:
    """Back where the form was: the list (with its filters) or the node's page."""
    return back_to(request, "/ui/nodes", f"/ui/nodes/{node_id}")


@router.post("/ui/node/eligibility/{node_id}", include_in_schema=False)
async def eligibility(
    node_id: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayWriteNode
) -> Response:
    wanted = "eligible" if flag((await fields(request)).get("eligible", "")) else "ineligible"
    decide = lambda reads: nodes.set_eligibility(reads, node_id, wanted)  # noqa: E731
    return await act(request, commands, decide, _back(request, node_id), f"Node marked {wanted}")


@router.post("/ui/node/drain/{node_id}", include_in_schema=False)
async def drain(
    node_id: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayWriteNode
) -> Response:
    """Start a drain (Nomad's `node drain -enable`): `deadline` a duration (`0`: none), `force`
    to force it now (Nomad's `-force`, a deadline of -1s), `ignore_system_jobs` to leave the
    system jobs' allocs (`-ignore-system`); or cancel one (`enable=false`; the node stays
    ineligible, as Nomad leaves it, unless `mark_eligible`)."""
    back = _back(request, node_id)
    form = await fields(request)
    spec = None
    if flag(form.get("enable", "")):
        deadline = form.get("deadline", DEFAULT_DEADLINE).strip() or DEFAULT_DEADLINE
        try:
            ns = -1 if flag(form.get("force", "")) or deadline == "-1s" else parse_duration(deadline)
        except ValueError as e:
            return done(request, back, f"Invalid deadline {deadline!r}: {e}", "error")
        if ns < -1:
            return done(request, back, f"Invalid deadline {deadline!r}: it is negative", "error")
        spec = DrainSpec(deadline=ns, ignore_system_jobs=flag(form.get("ignore_system_jobs", "")))
    eligible = flag(form.get("mark_eligible", ""))
    decide = lambda reads: nodes.drain(reads, node_id, spec, eligible, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, back, "Drain started" if spec else "Drain cancelled")
