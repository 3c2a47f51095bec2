"""Codec benchmark: what a 1,000-alloc plan costs to store, relay and follow, per alloc.

A real plan (the scheduling core placing 1,000 allocs on 5,000 nodes, metrics and all) is
encoded and decoded as the services do it: the plan applier encodes it for the log as
`PlanApplied` events of ALLOCS_PER_EVENT allocs,
five replicas decode it (replica form: the allocs in columns are left for the state to build,
so following, not decoding, is what compares with the list form) and the broker its summary
(drover.model.brokerstate),
a rebuild decodes it in full; workers encode the plan request and the applier decodes it. What
a replica and the broker spend following it (decode and apply, into a state of the cluster's
nodes) is timed too. Each is timed with the placements in columns and their metrics kept apart
(what Drover stores since migration 0004: `relayed_bytes_per_alloc` is what the relay
publishes), in columns with the metrics inline (the form before) and as a plain list (the form
before columns), median of --repeats runs, with the garbage collector's survivors frozen as
the services run (drover.runtime.pyheap).

    python -m bench.codec --out bench/out/codec.json
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from bench.report import write
from bench.scheduler import NOW, build_cluster, build_job
from drover.model import Evaluation
from drover.model.brokerstate import BrokerState, apply_for_broker, decode_for_broker
from drover.model.events import PlanApplied, decode_event, encode_event_json, encode_event_parts
from drover.model.reducer import apply
from drover.model.state import InMemoryState
from drover.planner.applier import ALLOCS_PER_EVENT
from drover.scheduler import schedule
from drover.scheduler.planapply import evaluate_plan, plan_applied_event
from drover.scheduler.wire import PlanRequest, decode_request, encode_request, pack, with_metrics

ALLOCS = 1000
# The request's list form (what workers sent before columns): the whole request as it is.
_REQ: TypeAdapter[PlanRequest] = TypeAdapter(PlanRequest)


def _as_list(events: list[PlanApplied]) -> list[str]:
    """The list form: every alloc whole, defaults left out."""
    return [
        '{"Type":"PlanApplied",' + event.model_dump_json(by_alias=True, exclude_defaults=True)[1:]
        for event in events
    ]


def _encode(events: list[PlanApplied]) -> list[str]:
    return [encode_event_json(event) for event in events]


def _parts(events: list[PlanApplied]) -> list[tuple[str, str | None]]:
    return [encode_event_parts(event) for event in events]


def _decode(stored: list[str], replica: bool, metrics: list[str | None] | None = None) -> list[Any]:
    if metrics is not None:
        return [decode_event(s, metrics=m) for s, m in zip(stored, metrics, strict=True)]
    return [decode_event(s, replica=replica) for s in stored]


def _follow(stored: list[str], states: list[InMemoryState], broker: bool) -> Callable[[], None]:
    """Decode and apply `stored` into the next of `states` (each holding the nodes only)."""
    left = iter(states)

    def follow() -> None:
        state = next(left)
        for pos, s in enumerate(stored, start=state.index + 1):
            if isinstance(state, BrokerState):
                apply_for_broker(state, pos, decode_for_broker(s))
            else:
                apply(state, pos, decode_event(s, replica=True))

    return follow


def _timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median microseconds per alloc of `fn`."""
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) / ALLOCS * 1e6)
    return round(statistics.median(runs), 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/codec.json")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    state = build_cluster(5000, 25)
    job = build_job(ALLOCS, [])
    state.upsert_job(job)
    evaluation = Evaluation(id="bench-eval", job_id=job.id, type=job.type, triggered_by="job-register")
    res = schedule(state, evaluation, NOW)
    event = plan_applied_event(evaluate_plan(state, res.plan), NOW)
    assert len(event.allocs) == ALLOCS
    events = [
        event.model_copy(update={"allocs": event.allocs[i : i + ALLOCS_PER_EVENT]})
        for i in range(0, ALLOCS, ALLOCS_PER_EVENT)
    ]
    request = PlanRequest(plan=res.plan, evals=[res.eval])
    columns, plain = _encode(events), _as_list(events)
    apart, metrics = [d for d, _ in _parts(events)], [m for _, m in _parts(events)]
    assert all('"Placements"' in s for s in columns) and not any("Metrics" in s for s in apart)
    wire_columns = encode_request(request)
    wire_plain = pack(_REQ.dump_json(request, by_alias=True, exclude_defaults=True))
    assert _decode(columns, False) == _decode(plain, False) == _decode(apart, False, metrics) == events
    assert with_metrics(decode_request(wire_columns)) == decode_request(wire_plain) == request
    r = args.repeats
    # States to follow the plan into: a replica's, the broker's (fresh ones for every run).
    followers: dict[bool, list[InMemoryState]] = {False: [], True: []}
    for broker, states in followers.items():
        for _ in range(3 * r):
            st: InMemoryState = (
                BrokerState() if broker else InMemoryState(drop_metrics=True, owns_events=True)
            )
            for node in state.all_nodes():
                st.upsert_node(node)
            st.bump(1)
            states.append(st)
    gc.freeze()
    forms: dict[str, dict[str, float]] = {}
    encoders: dict[str, Callable[[], Any]] = {
        "columns_metrics_apart": lambda: _parts(events),
        "columns": lambda: _encode(events),
        "list": lambda: _as_list(events),
    }
    for k, (name, stored, wire) in enumerate(
        (
            ("columns_metrics_apart", apart, wire_columns),
            ("columns", columns, wire_columns),
            ("list", plain, wire_plain),
        )
    ):
        side = metrics if name == "columns_metrics_apart" else None
        forms[name] = {
            "stored_bytes_per_alloc": round(
                (sum(map(len, stored)) + sum(len(m or "") for m in side or [])) / ALLOCS, 1
            ),
            "relayed_bytes_per_alloc": round(sum(map(len, stored)) / ALLOCS, 1),
            "store_encode_us": _timed(encoders[name], r),
            "replica_decode_us": _timed(lambda s=stored: _decode(s, True), r),  # type: ignore[misc]
            "full_decode_us": _timed(lambda s=stored, m=side: _decode(s, False, m), r),  # type: ignore[misc]
            "broker_decode_us": _timed(lambda s=stored: [decode_for_broker(x) for x in s], r),  # type: ignore[misc]
            "replica_follow_us": _timed(_follow(stored, followers[False][r * k :], False), r),
            "broker_follow_us": _timed(_follow(stored, followers[True][r * k :], True), r),
            "plan_request_bytes_per_alloc": round(len(wire) / ALLOCS, 1),
            "plan_request_encode_us": _timed(
                (lambda: encode_request(request))
                if name == "columns"
                else (lambda: pack(_REQ.dump_json(request, by_alias=True, exclude_defaults=True))),
                r,
            ),
            "plan_request_decode_us": _timed(lambda w=wire: decode_request(w), r),  # type: ignore[misc]
        }
    write({"benchmark": "codec", "allocs": ALLOCS, "per_alloc": forms}, args.out)


if __name__ == "__main__":
    main()
