"""/ui/allocations/<id>: an alloc - its task states and events, ports and addresses, the
reschedule chain and the placement metrics - with stop and restart, each running the command
its /v1 route runs (and needing `alloc-lifecycle` in the alloc's namespace, as it does)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import CommandsDep, ReadsDep
from drover.api.ui import access
from drover.api.ui.access import MayAllocLifecycle
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.placement import judge
from drover.api.ui.render import Context, Fragment, act, denied, page
from drover.control.commands import allocs
from drover.model import Allocation
from drover.runtime.store.queries import Reads

router = APIRouter()


def _alloc(reads: Reads, args: Mapping[str, Any]) -> Context | None:
    alloc = reads.alloc(args["alloc_id"])
    if alloc is None:
        return None
    node = reads.node(alloc.node_id) if alloc.node_id else None
    nodes = {}
    if alloc.metrics is not None:
        # The nodes the scheduler scored, by name (the scores name them by ID).
        nodes = reads.nodes_by_id([s.node_id for s in alloc.metrics.score_meta_data])
    return {"alloc": alloc, "node": node, "scored": nodes, "chain": chain(reads, alloc)}


# Allocs of a reschedule chain shown each way from the one on the page.
CHAIN = 10


def chain(reads: Reads, alloc: Allocation) -> list[Allocation]:
    """The alloc's reschedule chain, the first first: those it replaced (PreviousAllocation)
    and those that replaced it (NextAllocation), CHAIN each way at most."""
    before: list[Allocation] = []
    prev = alloc.previous_allocation
    while prev and len(before) < CHAIN:
        a = reads.alloc(prev)
        if a is None:
            break  # collected
        before.append(a)
        prev = a.previous_allocation
    after: list[Allocation] = []
    nxt = alloc.next_allocation
    while nxt and len(after) < CHAIN:
        a = reads.alloc(nxt)
        if a is None:
            break
        after.append(a)
        nxt = a.next_allocation
    return [*reversed(before), alloc, *after] if before or after else []


def _why(reads: Reads, args: Mapping[str, Any]) -> Context | None:
    """Every client judged for the alloc's group, in the job version it runs, and with what the
    live allocs use on it."""
    alloc = reads.alloc(args["alloc_id"])
    if alloc is None:
        return None
    job = reads.job_version(alloc.namespace, alloc.job_id, alloc.job_version) or reads.job(
        alloc.namespace, alloc.job_id
    )
    group = job.lookup_task_group(alloc.task_group) if job is not None else None
    if job is None or group is None:
        return {"verdicts": None, "group": alloc.task_group}
    nodes = reads.nodes()
    usage = reads.live_usage_by_node([n.id for n in nodes])
    if not alloc.terminal_status() and alloc.node_id in usage:
        # What the alloc itself holds on its client is not in the way of its own placement.
        r, (cpu, mem, disk) = alloc.resources, usage[alloc.node_id]
        usage[alloc.node_id] = (cpu - r.cpu, mem - r.memory_mb, disk - r.disk_mb)
    verdicts = judge(job, group, nodes, usage)
    return {"verdicts": verdicts, "group": alloc.task_group}


def _topics(ctx: Context) -> list[str]:
    return [f"Allocation:{ctx['alloc_id']}"]


FRAGMENTS = [
    Fragment("alloc", "fragments/alloc.html", _alloc, _topics),
    Fragment("why", "fragments/why.html", _why, _topics, lazy=True),
]


@router.get("/ui/allocations/{alloc_id}", include_in_schema=False)
async def alloc_page(alloc_id: str, request: Request, reads: ReadsDep) -> Response:
    if not await access.may_read(request, "alloc", alloc_id):
        return denied(request, "Your ACL token may not read the jobs of this allocation's namespace.")
    return await page(request, reads, "alloc.html", FRAGMENTS, {"alloc_id": alloc_id},
                      title=f"Allocation {alloc_id[:8]}")  # fmt: skip


def _url(alloc_id: str) -> str:
    return f"/ui/allocations/{alloc_id}"


@router.post("/ui/allocation/stop/{alloc_id}", include_in_schema=False)
async def stop(
    alloc_id: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayAllocLifecycle
) -> Response:
    decide = lambda reads: allocs.stop(reads, alloc_id, False, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, _url(alloc_id), "Allocation stopped: it will be replaced")


@router.post("/ui/allocation/restart/{alloc_id}", include_in_schema=False)
async def restart(
    alloc_id: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayAllocLifecycle
) -> Response:
    decide = lambda reads: allocs.restart_alloc(reads, alloc_id, "", False, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, _url(alloc_id), "Restart requested")
