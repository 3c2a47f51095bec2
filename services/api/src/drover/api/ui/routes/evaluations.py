"""/ui/evaluations: evaluations, the newest first, filtered by status, trigger and job on the
server, live; with ACLs on, those of the namespaces the token may read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import ReadsDep
from drover.api.ui import access
from drover.api.ui.render import Context, Fragment, denied, page
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
    return await page(request, reads, "evals.html", LIST, args, title="Evaluations", statuses=STATUSES,
                      triggers=TRIGGERS, vary=repr(within))  # fmt: skip
