"""A job's versions: revert (an earlier version registered again as the next one) and stable,
with Nomad's refusals."""

from __future__ import annotations

import pytest

from drover.control.commands import jobversions
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model.events import EvalsUpserted, JobRegistered, JobStabilityUpdated

from .conftest import NOW, Cluster, job


@pytest.fixture
def versions(cluster: Cluster) -> Cluster:
    """Job "web" at version 2 (count 3, then 5, then 7), version 1 stable."""
    for version, count in ((0, 3), (1, 5), (2, 7)):
        cluster.add(job(count=count, version=version, stable=version == 1))
    cluster.reads.stream_versions["job:default/web"] = 6
    return cluster


@pytest.mark.parametrize(
    ("path", "job_id", "version", "problems"),
    [
        ("web", "web", 0, []),
        ("web", "", 0, ["JobID must be specified"]),
        ("web", "api", 0, ["Job ID does not match"]),
        ("web", "", -1, ["JobID must be specified", "JobVersion must not be negative (got -1)"]),
    ],
)
def test_request_problems(path: str, job_id: str, version: int, problems: list[str]) -> None:
    assert jobversions.request_problems(path, job_id, version) == problems


def test_revert_registers_the_version_again_as_the_next_one(versions: Cluster) -> None:
    change = jobversions.revert(versions.reads, "default", "web", 1, 2, NOW)
    registered, evals = (e.event for e in change.events)
    assert isinstance(registered, JobRegistered) and change.events[0].expected_version == 6
    reverted = registered.job
    assert (reverted.version, reverted.task_groups[0].count, reverted.stable, reverted.submit_time) == (
        3,
        5,
        False,
        NOW,
    )
    assert isinstance(evals, EvalsUpserted) and [e.triggered_by for e in change.evals] == ["job-register"]


@pytest.mark.parametrize(
    ("job_id", "version", "enforce", "error", "message"),
    [
        ("nope", 0, None, NotFound, "job 'nope' not found"),
        ("web", 2, None, Invalid, "can't revert to current version"),
        ("web", 9, None, Invalid, "job 'web' in namespace 'default' at version 9 not found"),
        ("web", 0, 1, Conflict, "Current job has version 2; enforcing version 1"),
    ],
)
def test_revert_refusals(
    versions: Cluster, job_id: str, version: int, enforce: int | None, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        jobversions.revert(versions.reads, "default", job_id, version, enforce, NOW)


@pytest.mark.parametrize(
    ("version", "stable", "writes"), [(0, True, True), (1, False, True), (1, True, False), (2, True, True)]
)
def test_stable_writes_the_flag_unless_it_is_so_already(
    versions: Cluster, version: int, stable: bool, writes: bool
) -> None:
    change = jobversions.set_stability(versions.reads, "default", "web", version, stable)
    if not writes:
        assert change.events == []
        return
    (event,) = change.events
    assert event.event == JobStabilityUpdated(
        namespace="default", job_id="web", version=version, stable=stable
    )
    assert event.expected_version == 6 and change.evals == []


def test_stable_refusals(versions: Cluster) -> None:
    with pytest.raises(NotFound):
        jobversions.set_stability(versions.reads, "default", "nope", 0, True)
    with pytest.raises(Invalid, match="at version 5 not found"):
        jobversions.set_stability(versions.reads, "default", "web", 5, True)
