"""Job commands: what each appends, and what each refuses, without a database."""

from __future__ import annotations

from typing import Any

import pytest

from drover.control.commands import jobs
from drover.control.commands.scaling import ScaleRequest, scale
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Job
from drover.model.events import EvalsUpserted, JobDeregistered, JobRegistered, ScalingEventRegistered
from drover.model.job import PeriodicConfig

from .conftest import NOW, Cluster, job, node


def _changed(j: Job, **update: Any) -> Job:
    return j.model_copy(update=update)


@pytest.mark.parametrize(
    ("existing", "submitted", "version"),
    [
        (None, job(), 0),
        (job(version=3), job(), 3),  # the same spec again: the same version
        (job(version=3), job(count=5), 4),  # a changed spec: the next version
        (job(version=3), _changed(job(), submit_time=99, modify_index=7), 3),  # not part of the spec
        (job(version=3), job(meta={"owner": "ops"}), 4),
    ],
)
def test_the_version_rule(existing: Job | None, submitted: Job, version: int) -> None:
    assert jobs.next_version(existing, submitted) == version


def test_register_appends_the_job_at_its_version_and_an_eval_after_the_stream() -> None:
    change = jobs.register(job(count=5), job(version=2), 7, NOW)
    registered, evals = (e.event for e in change.events)
    assert isinstance(registered, JobRegistered) and isinstance(evals, EvalsUpserted)
    assert change.events[0].expected_version == 7
    assert registered.job.version == 3 and registered.job.submit_time == NOW
    (eval_,) = evals.evals
    assert (eval_.job_id, eval_.triggered_by, eval_.status, eval_.create_time) == (
        "web",
        "job-register",
        "pending",
        NOW,
    )
    assert change.eval_ids == [eval_.id] and change.job == registered.job


@pytest.mark.parametrize(
    ("existing", "index", "refusal"),
    [
        (None, 0, ""),
        (None, 5, "Enforcing job modify index 5: job does not exist"),
        (_changed(job(), job_modify_index=7), 7, ""),
        (_changed(job(), job_modify_index=7), 6, "Enforcing job modify index 6: job exists with conflicting job modify index: 7"),
        (_changed(job(), job_modify_index=7), 0, "Enforcing job modify index 0: job already exists"),
    ],
)  # fmt: skip
def test_register_with_enforce_index(existing: Job | None, index: int, refusal: str) -> None:
    if not refusal:
        assert jobs.register(job(count=5), existing, 1, NOW, enforce_index=index).job is not None
        return
    with pytest.raises(Conflict) as e:
        jobs.register(job(count=5), existing, 1, NOW, enforce_index=index)
    assert e.value.message == refusal


def test_prepare_fills_defaults_and_lists_every_problem() -> None:
    assert (
        jobs.prepare(Job(id="x", task_groups=job().task_groups)).task_groups[0].reschedule_policy is not None
    )
    bad = Job(id="bad job", type="cron", priority=500, task_groups=job(count=-1).task_groups)
    with pytest.raises(Invalid) as e:
        jobs.prepare(bad)
    lines = e.value.message.splitlines()
    assert lines[0] == "Job is invalid:" and len(lines) >= 4


@pytest.mark.parametrize("command", [
    lambda: jobs.deregister(None, False, NOW),
    lambda: jobs.evaluate(None, NOW),
])  # fmt: skip
def test_commands_on_an_unknown_job_are_not_found(command: Any) -> None:
    with pytest.raises(NotFound):
        command()


@pytest.mark.parametrize("purge", [False, True])
def test_deregister_stops_or_purges_and_evaluates(purge: bool) -> None:
    change = jobs.deregister(job(), purge, NOW)
    stopped = change.events[0].event
    assert isinstance(stopped, JobDeregistered) and stopped.purge is purge and stopped.job_id == "web"
    assert [e.triggered_by for e in change.evals] == ["job-deregister"]


def test_evaluate_writes_only_an_eval() -> None:
    change = jobs.evaluate(job(), NOW)
    assert [type(e.event) for e in change.events] == [EvalsUpserted]
    assert [e.triggered_by for e in change.evals] == ["job-register"]


def test_plan_schedules_the_job_at_its_next_version_and_writes_nothing(cluster: Cluster) -> None:
    cluster.add(node("n1"), node("n2"), job(count=2, version=1))
    existing, res = jobs.plan(cluster.state, job(count=4), NOW)
    assert existing is not None and existing.version == 1
    assert res.plan.annotations["g"].place == 4  # none placed yet
    assert cluster.state.job("default", "web").version == 2  # type: ignore[union-attr]
    assert cluster.state.allocs == {}


def _periodic(**kw: Any) -> Job:
    return job("nightly", type="batch", periodic=PeriodicConfig(specs=["0 2 * * *"]), **kw)


def test_a_periodic_job_is_registered_scaled_and_stopped_without_an_eval() -> None:
    change = jobs.register(_periodic(), None, 0, NOW)
    assert [type(e.event) for e in change.events] == [JobRegistered] and change.evals == []
    stopped = jobs.deregister(_periodic(), False, NOW)
    assert [type(e.event) for e in stopped.events] == [JobDeregistered] and stopped.evals == []
    scaled = scale(_periodic(), "nightly", "default", ScaleRequest(group="g", count=4), 1, NOW)
    assert [type(e.event) for e in scaled.events] == [JobRegistered, ScalingEventRegistered]
    assert scaled.evals == [] and scaled.job is not None and scaled.job.task_groups[0].count == 4


@pytest.mark.parametrize(
    ("existing", "submitted", "needle"),
    [
        (
            job("nightly", type="batch"),
            _periodic(),
            "cannot update non-periodic job 'nightly' to being periodic",
        ),
        (
            _periodic(),
            job("nightly", type="batch"),
            "cannot update periodic job 'nightly' to being non-periodic",
        ),
    ],
)
def test_a_job_cannot_become_or_stop_being_periodic(existing: Job, submitted: Job, needle: str) -> None:
    with pytest.raises(Invalid, match=needle):
        jobs.register(submitted, existing, 1, NOW)


def test_a_periodic_job_is_not_evaluated_but_launched() -> None:
    with pytest.raises(Invalid, match="can't evaluate periodic job 'nightly'"):
        jobs.evaluate(_periodic(), NOW)
