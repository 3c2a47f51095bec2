"""/ui/: the cluster at a glance - counts by status, what needs attention (blocked evals with
the dimensions their clients are out of, and, asked for, those clients named; failed allocs,
down nodes, failing deployments) and the log's latest entries. With ACLs on, of the namespaces
the token may read, and nodes only if it may read them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import ReadsDep
from drover.api.ui import access
from drover.api.ui.placement import judge
from drover.api.ui.render import Context, Fragment, page
from drover.model import Evaluation
from drover.model.alloc import AllocMetric
from drover.runtime.store.queries import Reads

router = APIRouter()


def _health(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"health": reads.health(args["within"], nodes=args["nodes"])}


def failures(reads: Reads, blocked: list[Evaluation]) -> dict[str, dict[str, AllocMetric]]:
    """Each blocked eval's placement failures by group: those of the eval that blocked (Nomad's
    blocked eval is a copy of it without them, its PreviousEval naming it)."""
    out = {}
    for e in blocked:
        cause = reads.eval(e.previous_eval) if not e.failed_tg_allocs and e.previous_eval else None
        out[e.id] = e.failed_tg_allocs or (cause.failed_tg_allocs if cause is not None else {})
    return out


def _attention(reads: Reads, args: Mapping[str, Any]) -> Context:
    within = args["within"]
    blocked = reads.blocked_evals(namespaces=within)
    return {
        "blocked": blocked,
        "blocked_failures": failures(reads, blocked),
        "failed": reads.failed_allocs(namespaces=within),
        "down": reads.down_nodes() if args["nodes"] else [],
        "troubled": reads.troubled_deployments(namespaces=within),
    }


def _exhausted(reads: Reads, args: Mapping[str, Any]) -> Context:
    """Each listed blocked eval's failed groups, every client judged with what the live allocs
    use on it: the exhausted ones named with their dimension, the filtered with their reason."""
    blocked = reads.blocked_evals()
    failed = failures(reads, blocked)
    nodes = reads.nodes()
    usage = reads.live_usage_by_node([n.id for n in nodes])
    judged = []
    for e in blocked:
        job = reads.job(e.namespace, e.job_id)
        groups = [(g, judge(job, tg, nodes, usage)) for g in sorted(failed[e.id])
                  if job is not None and (tg := job.lookup_task_group(g)) is not None]  # fmt: skip
        judged.append((e, groups))
    return {"judged": judged}


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
    Fragment("exhausted", "fragments/exhausted.html", _exhausted, lambda c: [], lazy=True),
]


@router.get("/ui/", include_in_schema=False)
async def overview(request: Request, reads: ReadsDep) -> Response:
    within = await access.within(request)
    nodes = access.may(request, access.NODE_READ)
    args = {"within": within, "nodes": nodes, "streams": _streams(within, nodes)}
    return await page(request, reads, "overview.html", FRAGMENTS, args, title="Overview",
                      vary=f"{within!r}{nodes}")  # fmt: skip
