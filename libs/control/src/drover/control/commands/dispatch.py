"""Dispatching a parameterized job (Nomad's Job.Dispatch): the request checked against the
job's `parameterized` block, then a child job `<job>/dispatch-<unix>-<8 hex>` registered with
its job-register eval in one append. A dispatch with an idempotency token appends its evals to
the token's stream (`dispatch_stream`), so a repeat, even a concurrent one, finds the child the
first made and answers with it instead of dispatching again."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from drover.control.change import Change
from drover.control.commands.operator import Admission
from drover.control.errors import Invalid, NotFound
from drover.model import Job
from drover.model.defaults import MAX_PRIORITY, MIN_PRIORITY
from drover.model.durations import SECOND
from drover.model.evaluation import TRIGGER_JOB_REGISTER, job_eval
from drover.model.events import EvalsUpserted, JobRegistered, NewEvent, dispatch_stream
from drover.model.job import DISPATCH_LAUNCH_SUFFIX, DISPATCH_PAYLOAD_FORBIDDEN, DISPATCH_PAYLOAD_REQUIRED
from drover.model.validation.dispatch import decode_payload

# The largest payload a dispatch may carry, decoded (Nomad's DispatchPayloadSizeLimit).
PAYLOAD_SIZE_LIMIT = 16 * 1024


@dataclass
class DispatchRequest:
    """What a dispatch asks for: Payload (base64), Meta, IdPrefixTemplate, Priority (0: the
    job's) and the idempotency token (a query parameter in Nomad's API)."""

    payload: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    id_prefix_template: str = ""
    priority: int = 0
    idempotency_token: str = ""


@dataclass
class DispatchChange(Change):
    """A dispatch: the child job, and whether it was dispatched before with the same token
    (then nothing is appended)."""

    child: Job | None = None
    repeated: bool = False


def dispatched_id(job_id: str, id_prefix_template: str, now: int) -> str:
    """A child's ID, as Nomad composes it: `<job>/dispatch-[<template>-]<unix seconds>-<8 hex>`."""
    prefix = f"{id_prefix_template}-" if id_prefix_template else ""
    return f"{job_id}{DISPATCH_LAUNCH_SUFFIX}{prefix}{now // SECOND}-{uuid.uuid4().hex[:8]}"


def request_problems(job: Job, req: DispatchRequest) -> list[str]:
    """Everything wrong with dispatching `job` (a parameterized job) with `req`."""
    assert job.parameterized_job is not None
    rules = job.parameterized_job
    out: list[str] = []
    payload = decode_payload(req.payload) if req.payload else b""
    if payload is None:
        out.append("Payload is not valid base64")
    elif len(payload) > PAYLOAD_SIZE_LIMIT:
        out.append(f"Payload is {len(payload)} bytes, over the limit of {PAYLOAD_SIZE_LIMIT}")
    if rules.payload == DISPATCH_PAYLOAD_REQUIRED and not req.payload:
        out.append(f"Payload is required by job {job.id!r} but none was given")
    elif rules.payload == DISPATCH_PAYLOAD_FORBIDDEN and req.payload:
        out.append(f"Payload is forbidden by job {job.id!r}")
    allowed = {*rules.meta_required, *rules.meta_optional}
    unknown = sorted(k for k in req.meta if k not in allowed)
    if unknown:
        out.append(
            f"Meta keys {', '.join(map(repr, unknown))} are not allowed by job {job.id!r} "
            f"(required: {', '.join(rules.meta_required) or 'none'}; "
            f"optional: {', '.join(rules.meta_optional) or 'none'})"
        )
    missing = [k for k in rules.meta_required if k not in req.meta]
    if missing:
        out.append(f"Meta keys {', '.join(map(repr, missing))} are required by job {job.id!r} but missing")
    if req.priority and not MIN_PRIORITY <= req.priority <= MAX_PRIORITY:
        out.append(f"Priority {req.priority} is outside {MIN_PRIORITY}..{MAX_PRIORITY}")
    if " " in req.id_prefix_template:
        out.append(f"IdPrefixTemplate {req.id_prefix_template!r} contains a space (a job ID may not)")
    return out


def dispatch(
    job: Job | None,
    req: DispatchRequest,
    token_child: Job | None,
    token_version: int,
    now: int,
    *,
    admission: Admission | None = None,
) -> DispatchChange:
    """Dispatch `job` with `req`. `token_child` is the child already dispatched with the
    request's idempotency token, if any, read when the token's stream was at `token_version`;
    with `admission`, only while the scheduler configuration allows registrations."""
    if admission is not None:
        admission.allow_registration()
    if job is None:
        raise NotFound("parameterized job not found")
    if not job.is_parameterized():
        raise Invalid(f"job {job.id!r} is not a parameterized job")
    if job.stop:
        raise Invalid(f"job {job.id!r} is stopped")
    problems = request_problems(job, req)
    if problems:
        raise Invalid.of(problems, f"Dispatch of job {job.id!r} refused:")
    if req.idempotency_token and token_child is not None:
        return DispatchChange(child=token_child, repeated=True)
    child = _child(job, req, now)
    # A periodic child is launched by the periodic dispatcher; any other is evaluated now.
    evals = [] if child.periodic is not None else [job_eval(child, TRIGGER_JOB_REGISTER, now)]
    events = [NewEvent(JobRegistered(job=child), expected_version=0)]
    if req.idempotency_token:
        stream = dispatch_stream(job.namespace, job.id, req.idempotency_token)
        events.append(
            NewEvent(EvalsUpserted(evals=evals, stream_name=stream), expected_version=token_version)
        )
    elif evals:
        events.append(NewEvent(EvalsUpserted(evals=evals)))
    return DispatchChange(events, evals, child=child)


def _child(job: Job, req: DispatchRequest, now: int) -> Job:
    """The child: a copy of the job under its own ID, dispatched, with the request's meta merged
    over the job's and its payload. It keeps the job's version, as Nomad's do."""
    return job.child(
        dispatched_id(job.id, req.id_prefix_template, now),
        now,
        dispatched=True,
        dispatch_idempotency_token=req.idempotency_token,
        payload=req.payload or None,
        meta={**job.meta, **req.meta},
        priority=req.priority or job.priority,
    )
