"""What workers and the plan applier say to each other over NATS (compressed JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import TypeAdapter

from drover.common.bus import pack, unpack
from drover.common.evaluation import Evaluation
from drover.scheduler.plan import Plan


@dataclass
class PlanRequest:
    """A plan, and the evals to write if - and only if - it commits in full (the processed
    eval's new status, follow-ups, a blocked eval)."""

    plan: Plan
    evals: list[Evaluation] = field(default_factory=list)


@dataclass
class PlanResponse:
    full: bool
    index: int = 0
    rejected_nodes: list[str] = field(default_factory=list)
    placed: int = 0
    error: str = ""


_REQ: TypeAdapter[PlanRequest] = TypeAdapter(PlanRequest)
_RESP: TypeAdapter[PlanResponse] = TypeAdapter(PlanResponse)


def encode_request(req: PlanRequest) -> bytes:
    return pack(_REQ.dump_json(req, by_alias=True, exclude_defaults=True))


def decode_request(data: bytes) -> PlanRequest:
    return _REQ.validate_json(unpack(data))


def encode_response(resp: PlanResponse) -> bytes:
    return _RESP.dump_json(resp)


def decode_response(data: bytes) -> PlanResponse:
    return _RESP.validate_json(data)
