"""A job's restart on its page: the form that starts one (Drover's durable job restart, what
`nomad job restart` does from the CLI, here kept in the log), the active or last restart with
its progress, live, and its Pause / Resume / Cancel - each running the command its /v1 route
runs (drover.api.routes.jobrestarts), with the `alloc-lifecycle` capability Nomad's restart
asks for."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response

from drover.api.deps import CommandsDep
from drover.api.ui.access import MayRestartJob
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields, flag
from drover.api.ui.render import Context, act, done, split_ref
from drover.control.commands import jobrestarts
from drover.control.commands.jobrestarts import JobRestartOptions
from drover.model import Allocation
from drover.model.jobrestart import ON_ERROR_FAIL, ON_ERROR_PAUSE, JobRestart
from drover.runtime.store.queries import Reads

router = APIRouter()


@dataclass
class Progress:
    """Where a restart stands: allocs restarted of those it will restart, batches likewise."""

    restarted: int
    total: int
    batches_done: int
    batches_total: int

    @property
    def percent(self) -> int:
        return 100 if not self.total else round(100 * self.restarted / self.total)


def progress(r: JobRestart, allocs: list[Allocation]) -> Progress:
    """As the watcher counts (drover.control.leader.jobrestartwatcher.next_batch): what is left
    are the live allocs of the chosen groups created before the restart and not restarted yet."""
    done = set(r.restarted_allocs)
    left = 0
    if not r.terminal():
        left = sum(
            1
            for a in allocs
            if (not r.groups or a.task_group in r.groups)
            and not a.terminal_status()
            and a.id not in done
            and a.create_index <= r.create_index
        )
    finished = r.batch_number - (1 if r.in_flight() else 0)
    return Progress(
        len(done), len(done) + left, finished, r.batch_number + math.ceil(left / max(1, r.batch_size))
    )


def load(reads: Reads, args: Mapping[str, Any]) -> Context:
    """The job's groups and tasks (the form's choices) and its newest restart."""
    job = reads.job(args["ns"], args["job_id"])
    restarts = reads.job_restarts_of(args["ns"], args["job_id"])
    current = restarts[0] if restarts else None
    prog = progress(current, reads.job_allocs(args["ns"], args["job_id"])) if current is not None else None
    groups = {g.name: [t.name for t in g.tasks] for g in job.task_groups} if job is not None else {}
    return {"restart": current, "progress": prog, "restart_groups": groups,
            "restart_job_stopped": job is None or job.stop}  # fmt: skip


def topics(ctx: Context) -> list[str]:
    # A restart's events are keyed by its ID and found by its job's (FilterKeys); its batches
    # move with the job's allocs; a deployment starting cancels it.
    return [f"{t}:{ctx['job_id']}" for t in ("JobRestart", "Allocation", "Deployment", "Job")]


def _url(ref: str) -> str:
    return "/ui/jobs/" + ref.lstrip("/") + "#f-restart"


def options(form: Mapping[str, str]) -> JobRestartOptions:
    """The form as the command's options (the command judges them: its refusal lists every
    problem). A wait of bare digits is seconds, as the field says."""
    wait = form.get("batch_wait", "").strip() or "0s"
    group, task = form.get("group", "").strip(), form.get("task", "").strip()
    return JobRestartOptions(
        batch_size=form.get("batch_size", "").strip() or "1",
        batch_wait=wait + "s" if wait.isdigit() and wait.isascii() else wait,
        groups=[group] if group else [],
        tasks=[task] if task else [],
        all_tasks=flag(form.get("all_tasks", "")),
        reschedule=form.get("mode", "") == "reschedule",
        on_error=form.get("on_error", "") or ON_ERROR_PAUSE,
    )


ON_ERRORS = (ON_ERROR_PAUSE, ON_ERROR_FAIL)


@router.post("/ui/job/restart/{ref:path}", include_in_schema=False)
async def start(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayRestartJob
) -> Response:
    ns, job_id = split_ref(ref)
    opts = options(await fields(request))
    decide = lambda reads: jobrestarts.start(reads, ns, job_id, opts, time.time_ns())  # noqa: E731
    return await act(request, commands, decide, _url(ref), f"Restart of {job_id} started")


async def _step(request: Request, commands: CommandsDep, ref: str, verb: str) -> Response:
    ns, job_id = split_ref(ref)
    restart_id = (await fields(request)).get("restart", "")
    if not restart_id:
        return done(request, _url(ref), "No restart named", "error")
    command = {"pause": jobrestarts.pause, "resume": jobrestarts.resume, "cancel": jobrestarts.cancel}[verb]
    decide = lambda reads: command(reads, ns, job_id, restart_id, time.time_ns())  # noqa: E731
    said = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[verb]
    return await act(request, commands, decide, _url(ref), f"Restart {said}")


@router.post("/ui/job/restart-pause/{ref:path}", include_in_schema=False)
async def pause(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayRestartJob
) -> Response:
    return await _step(request, commands, ref, "pause")


@router.post("/ui/job/restart-resume/{ref:path}", include_in_schema=False)
async def resume(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayRestartJob
) -> Response:
    return await _step(request, commands, ref, "resume")


@router.post("/ui/job/restart-cancel/{ref:path}", include_in_schema=False)
async def cancel(
    ref: str, request: Request, commands: CommandsDep, _c: CsrfChecked, _a: MayRestartJob
) -> Response:
    return await _step(request, commands, ref, "cancel")
