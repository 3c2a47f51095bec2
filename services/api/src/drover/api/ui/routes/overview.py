"""/ui/: the cluster at a glance - counts by status, what needs attention (blocked evals,
failed allocs, down nodes, failing deployments) and the log's latest entries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import ReadsDep
from drover.api.ui.render import Context, Fragment, page
from drover.runtime.store.queries import Reads

router = APIRouter()


def _health(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"health": reads.health()}


def _attention(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {
        "blocked": reads.blocked_evals(),
        "failed": reads.failed_allocs(),
        "down": reads.down_nodes(),
        "troubled": reads.troubled_deployments(),
    }


def _activity(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"log": reads.recent_log()}


HEALTH_TOPICS = ["Node:*", "Allocation:*", "Job:*", "Evaluation:*", "Deployment:*"]
ATTENTION_TOPICS = ["Node:*", "Allocation:*", "Evaluation:*", "Deployment:*"]
FRAGMENTS = [
    Fragment("health", "fragments/health.html", _health, lambda c: HEALTH_TOPICS),
    Fragment("attention", "fragments/attention.html", _attention, lambda c: ATTENTION_TOPICS),
    Fragment("activity", "fragments/activity.html", _activity, lambda c: ["*:*"]),
]


@router.get("/ui/", include_in_schema=False)
async def overview(request: Request, reads: ReadsDep) -> Response:
    return await page(request, reads, "overview.html", FRAGMENTS, {}, title="Overview")
