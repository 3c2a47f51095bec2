"""Scaling: a new version of the job with the group's count, a job-scaling eval and a scaling
event; a request without a count records only its event; every problem listed."""

from __future__ import annotations

import pytest

from drover.control.commands.scaling import ScaleRequest, bounds_problems, scale
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Deployment
from drover.model.events import EvalsUpserted, JobRegistered, ScalingEventRegistered
from drover.model.job import ScalingPolicy

from .conftest import NOW, job


@pytest.mark.parametrize(
    ("req", "problems"),
    [
        (ScaleRequest(group="nope", count=-2), ["Count must be a non-negative integer", "Target.Group 'nope' is not a task group"]),
        (ScaleRequest(group="", count=2), ["Target.Group is required"]),
        (ScaleRequest(group="g", count=2, error=True), ["Count must not be given when Error is true"]),
        (ScaleRequest(group="g", count=1, target_job="other"), ["Target.Job does not match"]),
        (ScaleRequest(group="g", target_namespace="prod"), ["Target.Namespace does not match"]),
    ],
)  # fmt: skip
def test_scale_refuses_with_every_problem(req: ScaleRequest, problems: list[str]) -> None:
    with pytest.raises(Invalid) as e:
        scale(job(), "web", "default", req, 1, NOW)
    assert len(e.value.message.splitlines()) == len(problems)
    for p in problems:
        assert p in e.value.message


def test_a_system_job_scales_between_0_and_1() -> None:
    with pytest.raises(Invalid, match='"system" can only be scaled between 0 and 1'):
        scale(job(type="system"), "web", "default", ScaleRequest(group="g", count=2), 1, NOW)
    assert scale(job(type="system"), "web", "default", ScaleRequest(group="g", count=0), 1, NOW).job


def test_an_unknown_job_is_not_found_unless_the_request_itself_is_wrong() -> None:
    with pytest.raises(NotFound):
        scale(None, "web", "default", ScaleRequest(group="g", count=1), 0, NOW)
    with pytest.raises(Invalid, match="Count must be"):
        scale(None, "web", "default", ScaleRequest(group="g", count=-1), 0, NOW)


def test_job_modify_index_is_checked_and_set() -> None:
    current = job().model_copy(update={"job_modify_index": 5})
    with pytest.raises(Conflict, match="JobModifyIndex 4"):
        scale(current, "web", "default", ScaleRequest(group="g", count=1, job_modify_index=4), 1, NOW)
    assert scale(
        current, "web", "default", ScaleRequest(group="g", count=1, job_modify_index=5), 1, NOW
    ).evals


def test_scale_registers_a_new_version_an_eval_and_the_event() -> None:
    current = job(count=3, version=4)
    req = ScaleRequest(group="g", count=7, message="busy", meta={"by": "autoscaler"})
    change = scale(current, "web", "default", req, 9, NOW)
    registered, recorded, evals = (e.event for e in change.events)
    assert isinstance(registered, JobRegistered) and change.events[0].expected_version == 9
    assert registered.job.version == 5 and registered.job.task_groups[0].count == 7
    assert registered.job.submit_time == NOW
    assert current.task_groups[0].count == 3  # the job read is left as it was
    assert isinstance(evals, EvalsUpserted) and [e.triggered_by for e in change.evals] == ["job-scaling"]
    assert isinstance(recorded, ScalingEventRegistered) and recorded.task_group == "g"
    event = recorded.event
    assert (event.count, event.previous_count, event.message, event.error, event.meta, event.eval_id, event.time) == (
        7, 3, "busy", False, {"by": "autoscaler"}, change.evals[0].id, NOW,
    )  # fmt: skip


def test_without_a_count_only_the_event_is_recorded() -> None:
    current = job(count=3, version=4)
    change = scale(
        current, "web", "default", ScaleRequest(group="g", message="no metrics", error=True), 9, NOW
    )
    (recorded,) = (e.event for e in change.events)
    assert isinstance(recorded, ScalingEventRegistered) and change.events[0].expected_version == 9
    assert change.evals == [] and change.job is current
    event = recorded.event
    assert (event.count, event.previous_count, event.error, event.eval_id) == (None, 3, True, None)


@pytest.mark.parametrize(
    ("status", "job_create_index", "refused"),
    [
        ("running", 4, True),
        ("paused", 4, True),
        ("successful", 4, False),
        ("failed", 4, False),
        # A deployment of an earlier job by the same ID (purged, registered again) is not its.
        ("running", 2, False),
    ],
)
def test_a_count_is_refused_while_the_jobs_deployment_is_active(
    status: str, job_create_index: int, refused: bool
) -> None:
    current = job(count=3, create_index=4)
    dep = Deployment(id="d1", job_id="web", job_create_index=job_create_index, status=status)
    req = ScaleRequest(group="g", count=5)
    if refused:
        with pytest.raises(Invalid) as e:
            scale(current, "web", "default", req, 9, NOW, dep)
        # Nomad's words exactly: autoscalers match them to wait and try again.
        assert e.value.message == "job scaling blocked due to active deployment"
    else:
        assert scale(current, "web", "default", req, 9, NOW, dep).job.task_groups[0].count == 5
    # A request without a count is only recorded: an autoscaler may report during a deployment.
    only_event = scale(current, "web", "default", ScaleRequest(group="g", message="waiting"), 9, NOW, dep)
    assert [e.event.type for e in only_event.events] == ["ScalingEventRegistered"]


@pytest.mark.parametrize(
    ("bounds", "count", "problems"),
    [
        ((1, 5), 3, []),
        ((1, 5), 1, []),
        ((1, 5), 5, []),
        ((1, 5), 0, ["group count was less than scaling policy minimum: 0 < 1"]),
        ((1, 5), 6, ["group count was greater than scaling policy maximum: 6 > 5"]),
        ((None, None), 100, []),
    ],
)
def test_a_count_outside_the_scaling_bounds_is_refused(
    bounds: tuple[int | None, int | None], count: int, problems: list[str]
) -> None:
    policy = ScalingPolicy(min=bounds[0], max=bounds[1])
    assert bounds_problems(policy, count) == problems
    assert bounds_problems(None, count) == []
