"""Dispatch: what a dispatch of a parameterized job appends, what it refuses (every problem at
once), and how an idempotency token answers a repeat; and the job commands' rules for
parameterized jobs (no eval of their own, no change to or from parameterized)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from drover.control.commands import jobs, scaling
from drover.control.commands.dispatch import PAYLOAD_SIZE_LIMIT, DispatchRequest, dispatch, dispatched_id
from drover.control.errors import Invalid, NotFound
from drover.model import Job
from drover.model.events import EvalsUpserted, JobDeregistered, JobRegistered, ScalingEventRegistered
from drover.model.job import ParameterizedJobConfig

from .conftest import NOW, job


def parent(
    payload: str = "optional", required: tuple[str, ...] = (), optional: tuple[str, ...] = (), **kw: Any
) -> Job:
    rules = ParameterizedJobConfig(
        payload=payload, meta_required=list(required), meta_optional=list(optional)
    )
    return job("p", count=1, type="batch", parameterized_job=rules, meta={"team": "a", "tier": "x"}, **kw)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_dispatch_registers_the_child_and_its_job_register_eval_in_one_change() -> None:
    p = parent(required=("input",), optional=("tier",)).model_copy(update={"version": 4, "create_index": 9})
    req = DispatchRequest(payload=b64(b"hello"), meta={"input": "s3://x", "tier": "y"})
    change = dispatch(p, req, None, 0, NOW)
    registered, evals = (e.event for e in change.events)
    assert isinstance(registered, JobRegistered) and isinstance(evals, EvalsUpserted)
    assert change.events[0].expected_version == 0  # a new stream: the child's ID is new
    assert evals.stream() == "evals" and change.events[1].expected_version is None
    child = registered.job
    assert re.fullmatch(rf"p/dispatch-{NOW // 10**9}-[0-9a-f]{{8}}", child.id), child.id
    assert (child.name, child.parent_id, child.dispatched, child.payload) == (
        child.id,
        "p",
        True,
        b64(b"hello"),
    )
    assert child.meta == {"team": "a", "tier": "y", "input": "s3://x"}  # merged over the job's
    assert (child.version, child.submit_time, child.create_index, child.priority) == (4, NOW, 0, p.priority)
    assert not child.is_parameterized() and child.parameterized_job == p.parameterized_job
    (eval_,) = evals.evals
    assert (eval_.job_id, eval_.triggered_by, eval_.status, eval_.type, eval_.priority) == (child.id, "job-register", "pending",
                                                                              "batch", p.priority)  # fmt: skip
    assert change.child == child and not change.repeated and change.eval_ids == [eval_.id]


def test_the_id_prefix_template_and_priority() -> None:
    change = dispatch(parent(), DispatchRequest(id_prefix_template="nightly", priority=80), None, 0, NOW)
    assert change.child is not None
    assert re.fullmatch(rf"p/dispatch-nightly-{NOW // 10**9}-[0-9a-f]{{8}}", change.child.id)
    assert change.child.priority == 80 and change.evals[0].priority == 80
    assert re.fullmatch(r"job/dispatch-5-[0-9a-f]{8}", dispatched_id("job", "", 5 * 10**9 + 7))


def test_a_token_claims_its_stream_and_a_repeat_answers_with_the_first_child() -> None:
    req = DispatchRequest(idempotency_token="tok")
    first = dispatch(parent(), req, None, 3, NOW)
    claim = first.events[1]
    assert isinstance(claim.event, EvalsUpserted) and claim.event.stream() == "dispatch:default/p/tok"
    # After the token's child was collected the stream is at 3: the claim expects it there.
    assert claim.expected_version == 3
    assert first.child is not None and first.child.dispatch_idempotency_token == "tok"
    again = dispatch(parent(), req, first.child, 4, NOW + 1)
    assert again.repeated and again.child == first.child and again.events == [] and again.evals == []


def test_a_repeat_is_checked_like_any_dispatch_first() -> None:
    earlier = dispatch(parent(), DispatchRequest(idempotency_token="t"), None, 0, NOW).child
    with pytest.raises(Invalid, match="Meta keys 'x' are not allowed"):
        dispatch(parent(), DispatchRequest(meta={"x": "1"}, idempotency_token="t"), earlier, 1, NOW)


def test_a_periodic_child_gets_no_eval_but_a_token_still_claims_its_stream() -> None:
    from drover.model import PeriodicConfig

    p = parent(periodic=PeriodicConfig(spec="*/5 * * * *"))
    assert dispatch(p, DispatchRequest(), None, 0, NOW).evals == []
    change = dispatch(p, DispatchRequest(idempotency_token="t"), None, 0, NOW)
    assert change.evals == [] and [type(e.event) for e in change.events] == [JobRegistered, EvalsUpserted]


BIG = b64(b"x" * (PAYLOAD_SIZE_LIMIT + 1))


@pytest.mark.parametrize(
    ("job_kw", "req", "problems"),
    [
        ({"payload": "required"}, DispatchRequest(), ["Payload is required by job 'p' but none was given"]),
        ({"payload": "forbidden"}, DispatchRequest(payload=b64(b"x")), ["Payload is forbidden by job 'p'"]),
        (
            {},
            DispatchRequest(payload=BIG),
            [f"Payload is {PAYLOAD_SIZE_LIMIT + 1} bytes, over the limit of 16384"],
        ),
        ({}, DispatchRequest(payload="%%%"), ["Payload is not valid base64"]),
        (
            {"required": ("a", "b")},
            DispatchRequest(meta={"a": "1"}),
            ["Meta keys 'b' are required by job 'p'"],
        ),
        (
            {"required": ("a",), "optional": ("b",)},
            DispatchRequest(meta={"a": "1", "z": "2", "y": "3"}),
            ["Meta keys 'y', 'z' are not allowed by job 'p' (required: a; optional: b)"],
        ),
        ({}, DispatchRequest(meta={"a": "1"}), ["Meta keys 'a' are not allowed by job 'p' (required: none"]),
        ({}, DispatchRequest(priority=101), ["Priority 101 is outside 1..100"]),
        ({}, DispatchRequest(id_prefix_template="a b"), ["IdPrefixTemplate 'a b' contains a space"]),
        (
            {"payload": "forbidden", "required": ("r",)},
            DispatchRequest(payload=BIG, meta={"u": "1"}, priority=-1),
            [
                "over the limit",
                "Payload is forbidden",
                "Meta keys 'u' are not allowed",
                "Meta keys 'r' are required",
                "Priority -1 is outside",
            ],
        ),
    ],
)
def test_refusals_list_every_problem(
    job_kw: dict[str, Any], req: DispatchRequest, problems: list[str]
) -> None:
    with pytest.raises(Invalid) as e:
        dispatch(parent(**job_kw), req, None, 0, NOW)
    title, *lines = e.value.message.splitlines()
    assert title == "Dispatch of job 'p' refused:"
    assert len(lines) == len(problems), lines
    for line, words in zip(lines, problems, strict=True):
        assert words in line, (words, line)


def test_only_a_live_parameterized_job_is_dispatched() -> None:
    with pytest.raises(NotFound):
        dispatch(None, DispatchRequest(), None, 0, NOW)
    with pytest.raises(Invalid, match="job 'web' is not a parameterized job"):
        dispatch(job(), DispatchRequest(), None, 0, NOW)
    child = dispatch(parent(), DispatchRequest(), None, 0, NOW).child
    with pytest.raises(Invalid, match="is not a parameterized job"):
        dispatch(child, DispatchRequest(), None, 0, NOW)
    with pytest.raises(Invalid, match="job 'p' is stopped"):
        dispatch(parent(stop=True), DispatchRequest(), None, 0, NOW)


def test_a_parameterized_job_is_registered_scaled_and_stopped_without_an_eval() -> None:
    p = parent()
    registered = jobs.register(p, None, 0, NOW)
    assert [type(e.event) for e in registered.events] == [JobRegistered] and registered.evals == []
    scaled = scaling.scale(p, "p", "default", scaling.ScaleRequest(group="g", count=3), 1, NOW)
    assert scaled.evals == [] and scaled.job is not None and scaled.job.task_groups[0].count == 3
    assert [type(e.event) for e in scaled.events] == [JobRegistered, ScalingEventRegistered]
    stopped = jobs.deregister(p, False, NOW)
    assert [type(e.event) for e in stopped.events] == [JobDeregistered] and stopped.evals == []
    with pytest.raises(Invalid, match="can't evaluate parameterized job 'p'"):
        jobs.evaluate(p, NOW)


@pytest.mark.parametrize(
    ("existing", "submitted", "words"),
    [
        (None, job(dispatched=True), "a job cannot be registered with Dispatched set"),
        (job(), parent(), "cannot update a non-parameterized job to being parameterized"),
        (
            parent(),
            job("p", count=1, type="batch"),
            "cannot update a parameterized job to being non-parameterized",
        ),
        (parent(dispatched=True), parent(), "Dispatched is read-only"),
    ],
)
def test_register_refuses_what_only_a_dispatch_does(existing: Job | None, submitted: Job, words: str) -> None:
    with pytest.raises(Invalid, match=words):
        jobs.register(submitted, existing, 1, NOW)


def test_a_dispatched_child_may_be_registered_again() -> None:
    child = dispatch(parent(), DispatchRequest(), None, 0, NOW).child
    assert child is not None
    again = jobs.register(child, child, 1, NOW)
    assert again.job is not None and again.job.dispatched and len(again.evals) == 1
