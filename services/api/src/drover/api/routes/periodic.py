"""/v1/job/:id/periodic/force: launch a periodic job's child now (Nomad's periodic force)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter

from drover.api.deps import CommandsDep
from drover.api.jsondecode import JsonRoute
from drover.control.commands import periodic

router = APIRouter(route_class=JsonRoute, tags=["periodic"])


@router.put("/v1/job/{job_id:path}/periodic/force")
@router.post("/v1/job/{job_id:path}/periodic/force")
async def force(job_id: str, commands: CommandsDep, namespace: str = "default") -> dict[str, Any]:
    change, positions = await commands.run(
        lambda reads: periodic.force(reads, namespace, job_id, time.time_ns()), span="job.periodic.force"
    )
    # The child's registration, then its eval.
    return {"EvalID": change.eval_ids[0], "EvalCreateIndex": positions[1], "Index": positions[-1]}
