"""/ui/evaluations: evaluations, the newest first, filtered by status, trigger, job and namespace
on the server, live (with ACLs on, those of the namespaces the token may read);
/ui/evaluations/<id>: one eval - its related evals (Nomad's `?related=true`: the chain of
previous, next and blocked evals), its failed placements and their metrics, its allocs, and
links to its job, deployment and node."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import ReadsDep
from drover.api.ui import access
from drover.api.ui.render import Context, Fragment, denied, page
from drover.api.views import related_evals
from drover.model import evaluation
from drover.runtime.store.queries import Reads

router = APIRouter()

PER_PAGE = 25
STATUSES = ("blocked", "pending", "complete", "failed", "canceled")
# Every TriggeredBy Nomad writes (drover.model.evaluation's TRIGGER_* names).
TRIGGERS = sorted(v for k, v in vars(evaluation).items() if k.startswith("TRIGGER_") and isinstance(v, str))


def _evals(reads: Reads, args: Mapping[str, Any]) -> Context:
    return {"evals": reads.eval_page(namespace=args["within"], status=args["status"],
                                     triggered_by=args["triggered_by"], job=args["q"], after=args["after"],
                                     before=args["before"], limit=PER_PAGE)}  # fmt: skip


LIST = [Fragment("evaluations", "fragments/evals.html", _evals, lambda c: ["Evaluation:*"])]


@router.get("/ui/evaluations", include_in_schema=False)
async def eval_list(
    request: Request, reads: ReadsDep, namespace: str = "*", status: str = "", triggered_by: str = "",
    q: str = "", after: str = "", before: str = "",
) -> Response:  # fmt: skip
    namespace = namespace or "*"
    if namespace != "*" and not access.may(request, access.READ_JOB, namespace):
        return denied(request, f"Your ACL token may not read the evaluations of namespace {namespace}.")
    within = namespace if namespace != "*" else await access.within(request)
    args = {"namespace": namespace, "within": within, "status": status if status in STATUSES else "",
            "triggered_by": triggered_by if triggered_by in TRIGGERS else "", "q": q.strip(),
            "after": after, "before": before}  # fmt: skip
    # The filter's choices: for the page, not for its live fragment.
    namespaces = [] if "fragment" in request.query_params else await asyncio.to_thread(reads.known_namespaces)
    namespaces = [n for n in namespaces if access.may(request, access.READ_JOB, n)]
    if namespace not in (*namespaces, "*"):
        namespaces.append(namespace)  # asked for by URL: still shown as chosen
    return await page(request, reads, "evals.html", LIST, args, title="Evaluations", statuses=STATUSES,
                      triggers=TRIGGERS, namespaces=namespaces, vary=repr(within))  # fmt: skip


def _eval(reads: Reads, args: Mapping[str, Any]) -> Context | None:
    ev = reads.eval(args["eval_id"])
    if ev is None:
        return None
    allocs = reads.allocs(namespace=ev.namespace, job_id=ev.job_id, eval_id=ev.id) if ev.job_id else []
    return {
        "eval": ev,
        "related": related_evals(reads, ev),
        "allocs": sorted(allocs, key=lambda a: a.name),
        "job_there": bool(ev.job_id) and reads.job(ev.namespace, ev.job_id) is not None,
    }


def _eval_topics(ctx: Context) -> list[str]:
    # The eval and those it links to (a blocked eval's unblocking, the next one's outcome).
    ids = {ctx["eval_id"], *(e.id for e in ctx.get("related", []))}
    return [f"Evaluation:{i}" for i in ids]


DETAIL = [Fragment("eval", "fragments/eval.html", _eval, _eval_topics)]


@router.get("/ui/evaluations/{eval_id}", include_in_schema=False)
async def eval_page(eval_id: str, request: Request, reads: ReadsDep) -> Response:
    if not await access.may_read(request, "eval", eval_id):
        return denied(request, "Your ACL token may not read this evaluation's namespace.")
    return await page(request, reads, "eval.html", DETAIL, {"eval_id": eval_id},
                      title=f"Evaluation {eval_id[:8]}")  # fmt: skip
