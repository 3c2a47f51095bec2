"""What workers and the plan applier say to each other over NATS (zlib-compressed JSON). A plan's
placements travel in columns, as the log stores them (drover.model.placements)."""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass, field

from pydantic import BaseModel, TypeAdapter

from drover.model.evaluation import Evaluation
from drover.model.placements import COLUMNS_FROM, Placements, encode_placements
from drover.model.placements import with_metrics as allocs_with_metrics
from drover.scheduler.plan import Plan


def pack(data: bytes) -> bytes:
    """Compress a message body (plans carry hundreds of allocs; NATS caps payloads)."""
    return zlib.compress(data, 3)


def unpack(data: bytes) -> bytes:
    return zlib.decompress(data)


@dataclass
class PlanRequest:
    """A plan, and the evals to write if - and only if - it commits in full (the processed
    eval's new status, follow-ups, a blocked eval)."""

    plan: Plan
    evals: list[Evaluation] = field(default_factory=list)
    # A decoded request's placement metrics as JSON, by alloc ID: those allocs' `metrics` are
    # left undecoded (None). The plan applier writes them to the log and the projections as
    # they are (PlanApplied.metrics_json): decoding 1,000 allocs' metrics and encoding them
    # again was 40% of its CPU per plan outside the database.
    metrics_json: dict[str, str] = field(default_factory=dict)


@dataclass
class PlanResponse:
    full: bool
    index: int = 0
    rejected_nodes: list[str] = field(default_factory=list)
    placed: int = 0
    error: str = ""


_REQ: TypeAdapter[PlanRequest] = TypeAdapter(PlanRequest)
_RESP: TypeAdapter[PlanResponse] = TypeAdapter(PlanResponse)


class _Columns(BaseModel):
    """A request whose placements are in columns, the rest of the plan as it is."""

    request: PlanRequest
    placements: Placements


def encode_request(req: PlanRequest) -> bytes:
    placed = req.plan.placements()
    if len(placed) < COLUMNS_FROM:
        return pack(_REQ.dump_json(req, by_alias=True, exclude_defaults=True))
    rest = dataclasses.replace(req, plan=dataclasses.replace(req.plan, node_allocation={}))
    body = _REQ.dump_json(rest, by_alias=True, exclude_defaults=True).decode()
    # Each alloc's metrics as a JSON text of its own: the applier passes them on undecoded.
    placements = encode_placements(placed, metrics_each=True)
    return pack(f'{{"request":{body},"placements":{placements}}}'.encode())


def decode_request(data: bytes) -> PlanRequest:
    raw = unpack(data)
    if not raw.startswith(b'{"request":'):
        return _REQ.validate_json(raw)
    columns = _Columns.model_validate_json(raw)
    req = columns.request
    allocs = columns.placements.allocs()
    for a in allocs:  # grouped by node again, in the order they were sent
        req.plan.append_alloc(a)
    req.metrics_json = columns.placements.metrics_by_id(allocs)
    return req


def with_metrics(req: PlanRequest) -> PlanRequest:
    """`req` with the metrics it holds as JSON decoded into its allocs (what it was sent as;
    for comparisons: the plan applier never needs them decoded)."""
    if not req.metrics_json:
        return req
    node_allocation = {
        node_id: allocs_with_metrics(allocs, req.metrics_json)
        for node_id, allocs in req.plan.node_allocation.items()
    }
    plan = dataclasses.replace(req.plan, node_allocation=node_allocation)
    return dataclasses.replace(req, plan=plan, metrics_json={})


def encode_response(resp: PlanResponse) -> bytes:
    return _RESP.dump_json(resp)


def decode_response(data: bytes) -> PlanResponse:
    return _RESP.validate_json(data)
