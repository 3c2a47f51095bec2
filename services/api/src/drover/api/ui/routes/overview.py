"""/ui/: the cluster at a glance - counts by status, what needs attention (blocked evals,
failed allocs, down nodes, failing deployments) and the log's latest entries. With ACLs on,
of the namespaces the token may read, and nodes only if it may read them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import ReadsDep
from drover.api.ui import access
from drover.api.ui.render import Context, Fragment, page
from drover.runtime.store.queries import Reads

router = APIRouter()


def _health(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"health": reads.health(args["within"], nodes=args["nodes"])}


def _attention(reads: Reads, args: Mapping[str, Any]) -> Context:
    within = args["within"]
    return {
        "blocked": reads.blocked_evals(namespaces=within),
        "failed": reads.failed_allocs(namespaces=within),
        "down": reads.down_nodes() if args["nodes"] else [],
        "troubled": reads.troubled_deployments(namespaces=within),
    }


def _activity(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"log": reads.recent_log(streams=args["streams"])}


def _streams(within: str | tuple[str, ...], nodes: bool) -> list[str] | None:
    """The log's streams a token may see the entries of: its namespaces' jobs (their restarts
    and dispatches), and the nodes' if it may read nodes (None: every stream)."""
    if within == "*":
        return None
    prefixes = [f"{kind}:{ns}/" for ns in within for kind in ("job", "jobrestart", "dispatch")]
    return prefixes + (["node:"] if nodes else [])


HEALTH_TOPICS = ["Node:*", "Allocation:*", "Job:*", "Evaluation:*", "Deployment:*"]
ATTENTION_TOPICS = ["Node:*", "Allocation:*", "Evaluation:*", "Deployment:*"]
FRAGMENTS = [
    Fragment("health", "fragments/health.html", _health, lambda c: HEALTH_TOPICS),
    Fragment("attention", "fragments/attention.html", _attention, lambda c: ATTENTION_TOPICS),
    Fragment("activity", "fragments/activity.html", _activity, lambda c: ["*:*"]),
]


@router.get("/ui/", include_in_schema=False)
async def overview(request: Request, reads: ReadsDep) -> Response:
    within = await access.within(request)
    nodes = access.may(request, access.NODE_READ)
    args = {"within": within, "nodes": nodes, "streams": _streams(within, nodes)}
    return await page(request, reads, "overview.html", FRAGMENTS, args, title="Overview",
                      vary=f"{within!r}{nodes}")  # fmt: skip
