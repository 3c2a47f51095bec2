"""/v1/jobs/parse and /v1/validate/job: a jobspec turned into the Job's JSON, and a job checked
as a register would check it; neither writes anything."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter
from pydantic import ValidationError

from drover.api.deps import ReadsDep
from drover.api.errors import ApiError, problems
from drover.api.jsondecode import JsonRoute
from drover.api.requestmodels import JobsParseRequest, JobValidateRequest
from drover.jobspec import JobspecError, parse
from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.namespace import job_problems
from drover.model.validation import validate_job

router = APIRouter(route_class=JsonRoute, tags=["jobs"])


@router.put("/v1/jobs/parse")
@router.post("/v1/jobs/parse")
def parse_job(body: JobsParseRequest) -> dict[str, Any]:
    """The job the HCL describes, as Nomad's API JSON; with Canonicalize, defaults filled in.
    The filesystem functions are refused, as Nomad's server refuses them; bcrypt() and
    uuidv4() take the machine's randomness; Variables is read as a var file."""
    if not body.job_hcl:
        raise ApiError(400, "Job spec is empty")
    try:
        job = parse_jobspec(body.job_hcl, body.variables)
    except JobspecError as e:
        raise ApiError(400, "Failed to parse job:\n" + "\n".join(e.problems)) from None
    if not body.canonicalize:
        return job
    try:
        canonical: dict[str, Any] = _with_unmodelled(canonicalize(Job.model_validate(job)).to_api(), job)
        return canonical
    except ValidationError as e:
        raise ApiError(
            400, "\n".join(problems([{**err, "loc": ("job", *err["loc"])} for err in e.errors()]))
        ) from None


def parse_jobspec(job_hcl: str, variables: str = "") -> dict[str, Any]:
    """The job an HCL2 jobspec describes, in Nomad's API JSON (raises JobspecError): what
    /v1/jobs/parse and the console's job editor parse with."""
    var_files = [("variables.hcl", variables)] if variables else []
    job: dict[str, Any] = parse(job_hcl, filename="input.hcl", var_files=var_files, random=os.urandom)
    return job


@router.put("/v1/validate/job")
@router.post("/v1/validate/job")
def validate(body: JobValidateRequest, reads: ReadsDep) -> dict[str, Any]:
    """Every problem a register would refuse the job for, in Nomad's JobValidateResponse: its
    own, and its namespace's (the job's: Nomad validates a job where it says it goes)."""
    if body.job is None:
        raise ApiError(400, "Job must be specified")
    job = canonicalize(body.job)
    found = validate_job(job) + job_problems(job, reads.namespace(job.namespace))
    return {
        "DriverConfigValidated": True,
        "ValidationErrors": found or None,
        "Error": _multierror(found),
        "Warnings": body.warnings,
    }


def _with_unmodelled(canonical: Any, parsed: Any) -> Any:
    """The canonical job with what the jobspec gave that Drover's model does not keep
    (services, networks, templates...) put back, so canonicalizing loses nothing."""
    if isinstance(canonical, dict) and isinstance(parsed, dict):
        out = dict(canonical)
        for key, value in parsed.items():
            out[key] = _with_unmodelled(canonical[key], value) if key in canonical else value
        return out
    if isinstance(canonical, list) and isinstance(parsed, list) and len(canonical) == len(parsed):
        return [_with_unmodelled(c, p) for c, p in zip(canonical, parsed, strict=True)]
    return canonical


def _multierror(found: list[str]) -> str:
    """The problems as Nomad's multierror writes them."""
    if not found:
        return ""
    head = "1 error occurred:" if len(found) == 1 else f"{len(found)} errors occurred:"
    return head + "\n" + "".join(f"\t* {p}\n" for p in found) + "\n"
