"""Parameterized jobs: the `parameterized` block, a dispatched child's payload and the tasks'
`dispatch_payload` blocks (structs.ParameterizedJobConfig.Validate,
structs.DispatchPayloadConfig.Validate)."""

from __future__ import annotations

import base64
import binascii
import posixpath

from drover.model.job import (
    DISPATCH_PAYLOAD_RULES,
    JOB_TYPE_BATCH,
    JOB_TYPE_SYSBATCH,
    DispatchPayloadConfig,
    ParameterizedJobConfig,
)


def parameterized_problems(p: ParameterizedJobConfig, job_type: str) -> list[str]:
    """What is wrong with the `parameterized` block of a job of `job_type`."""
    out: list[str] = []
    if job_type not in (JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH):
        out.append(f"parameterized is only allowed for batch and sysbatch jobs, not {job_type!r}")
    if p.payload not in DISPATCH_PAYLOAD_RULES:
        out.append(
            f"parameterized payload {p.payload!r} is unknown (expected {', '.join(DISPATCH_PAYLOAD_RULES)})"
        )
    if "" in p.meta_required or "" in p.meta_optional:
        out.append("a parameterized meta key is empty")
    both = sorted(set(p.meta_required) & set(p.meta_optional))
    if both:
        out.append(f"parameterized meta keys {', '.join(map(repr, both))} are both required and optional")
    return out


def decode_payload(payload: str) -> bytes | None:
    """A payload's bytes from its base64 (standard alphabet, padded, as Nomad's JSON carries
    bytes); None if it is not base64."""
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


def payload_problems(payload: str | None) -> list[str]:
    if payload is not None and decode_payload(payload) is None:
        return ["payload is not valid base64"]
    return []


def dispatch_payload_path(task_name: str, file: str) -> str | None:
    """Where, relative to the alloc dir, a task's dispatch_payload `file` is written: under the
    task's local dir, as Nomad places it (an absolute name is taken as relative to it). None
    when the name leads out of the alloc dir."""
    path = posixpath.normpath(posixpath.join(task_name, "local", file.lstrip("/")))
    return None if path == ".." or path.startswith("../") else path


def dispatch_payload_problems(d: DispatchPayloadConfig, task_name: str) -> list[str]:
    if not d.file:
        return ["dispatch_payload names no file"]
    if dispatch_payload_path(task_name or "task", d.file) is None:
        return [f"dispatch_payload file {d.file!r} leads out of the allocation directory"]
    return []
