"""The job editor's text: an HCL2 jobspec or the job's JSON, read into a plan request exactly as
/v1/jobs/parse and /v1/job/:id/plan read theirs, every problem with its line where one is known."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from drover.api.errors import ApiError, problems
from drover.api.jsondecode import decode
from drover.api.requestmodels import JobPlanRequest
from drover.api.routes.parse import parse_jobspec
from drover.jobspec import JobspecError
from drover.model import Job

HCL, JSON = "hcl", "json"
FORMATS = (HCL, JSON)
# The jobspec reader's `file:line: ...`.
_AT_LINE = re.compile(r"^input\.hcl:(\d+): ?")
# Members a registered job carries that are the cluster's, not its spec: left out of the JSON
# the editor starts from (Nomad's UI shows the spec, and a register ignores them anyway).
SERVER_FIELDS = ("Status", "StatusDescription", "Version", "Stable", "CreateIndex", "ModifyIndex",
                 "JobModifyIndex", "SubmitTime")  # fmt: skip


@dataclass(frozen=True)
class Problem:
    text: str
    line: int = 0  # 0: the line is not known (a field of the job as a whole)


@dataclass(frozen=True)
class Spec:
    """What the editor posted: the text, its format, the var file's content and the namespace
    chosen (empty: the spec's own)."""

    text: str
    format: str = ""
    variables: str = ""
    namespace: str = ""

    @property
    def kind(self) -> str:
        """The format asked for, else JSON when the text starts as JSON does (HCL cannot)."""
        if self.format in FORMATS:
            return self.format
        return JSON if self.text.lstrip()[:1] in ("{", "[") else HCL


def read(spec: Spec) -> tuple[JobPlanRequest | None, list[Problem]]:
    """The plan request (with Diff) the text makes, or every problem it has."""
    if not spec.text.strip():
        return None, [Problem("The job spec is empty")]
    try:
        doc = _json(spec.text) if spec.kind == JSON else parse_jobspec(spec.text, spec.variables)
    except JobspecError as e:
        return None, [_located(p) for p in e.problems]
    except _Problems as e:
        return None, e.found
    if spec.namespace:  # the chosen namespace wins, as ?namespace= does over the body's
        doc = {**doc, "Namespace": spec.namespace}
    try:
        return JobPlanRequest.model_validate({"Job": doc, "Diff": True}), []
    except ValidationError as e:
        found = problems([{**err, "loc": ("body", *err["loc"])} for err in e.errors()])
        return None, [Problem(p) for p in found]


def editable(job: Job) -> str:
    """The job's JSON as the editor starts from it (Drover keeps no submitted source)."""
    doc = {k: v for k, v in job.to_api().items() if k not in SERVER_FIELDS}
    return json.dumps(_without_nulls(doc), indent=2)


def _without_nulls(value: Any) -> Any:
    # null means "the default" to a register (drover.api.jsondecode): shorter to read without.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


class _Problems(Exception):
    def __init__(self, found: list[Problem]) -> None:
        super().__init__("\n".join(p.text for p in found))
        self.found = found


def _json(text: str) -> dict[str, Any]:
    """A job's JSON, bare or as `{"Job": {...}}` (what `nomad job run -output` writes), checked
    as the API's bodies are (drover.api.jsondecode)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        raise _Problems([Problem(f"Malformed JSON: {e.msg} (column {e.colno})", e.lineno)]) from None
    try:
        doc = decode(text.encode())
    except ApiError as e:
        raise _Problems([Problem(line) for line in e.message.splitlines()]) from None
    if not isinstance(doc, dict):
        raise _Problems([Problem("The job's JSON must be an object")])
    inner = doc.get("Job")
    return inner if isinstance(inner, dict) and len(doc) == 1 else doc


def _located(problem: str) -> Problem:
    m = _AT_LINE.match(problem)
    return Problem(problem[m.end() :], int(m.group(1))) if m else Problem(problem)
