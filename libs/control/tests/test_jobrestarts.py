"""Job restart commands: what starting, pausing, resuming and cancelling append, and every
refusal, without a database."""

from __future__ import annotations

from typing import Any

import pytest

from drover.control.commands import jobrestarts
from drover.control.commands.jobrestarts import JobRestartOptions
from drover.control.errors import Conflict, Invalid, NotFound
from drover.model import Deployment, Task, TaskGroup
from drover.model.events import JobRestartStarted, JobRestartUpdated
from drover.model.jobrestart import JobRestart

from .conftest import NOW, Cluster, alloc, job


def _two_groups() -> Any:
    j = job("web", count=3)
    api = TaskGroup(
        name="api", count=1, tasks=[Task(name="t", driver="mock"), Task(name="side", driver="mock")]
    )
    return j.model_copy(update={"task_groups": [*j.task_groups, api]})


def _cluster(cluster: Cluster, allocs: int = 4) -> Cluster:
    web = _two_groups()
    cluster.add(web, *(alloc(f"a{i}", web, client_status="running") for i in range(allocs)))
    return cluster


@pytest.mark.parametrize(
    ("opts", "batch_size", "wait"),
    [
        (JobRestartOptions(), 1, 0),
        (JobRestartOptions(batch_size=3, batch_wait="2s"), 3, 2_000_000_000),
        (JobRestartOptions(batch_size="50%", batch_wait=5), 2, 5),  # of 4 allocs
        (JobRestartOptions(batch_size="10%"), 1, 0),  # rounded up
        (JobRestartOptions(batch_size="100%", groups=["g"]), 4, 0),  # the allocs of group g
        (JobRestartOptions(batch_size="34%"), 2, 0),
    ],
)
def test_start(cluster: Cluster, opts: JobRestartOptions, batch_size: int, wait: int) -> None:
    _cluster(cluster)
    cluster.reads.stream_versions["jobrestart:default/web"] = 6
    change = jobrestarts.start(cluster.reads, "default", "web", opts, NOW)
    (started,) = change.events
    assert isinstance(started.event, JobRestartStarted) and started.expected_version == 6
    r = started.event.restart
    assert (r.batch_size, r.batch_wait, r.status, r.started_at) == (batch_size, wait, "running", NOW)
    assert r.id and r.id == change.restart.id  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("opts", "problems"),
    [
        (JobRestartOptions(batch_size=0), ["BatchSize must be at least 1"]),
        (JobRestartOptions(batch_size=-2), ["BatchSize must be a count"]),
        (JobRestartOptions(batch_size="150%"), ["at most 100%"]),
        (JobRestartOptions(batch_size="many"), ["BatchSize must be a count"]),
        (JobRestartOptions(batch_wait=-1), ["BatchWait must not be negative"]),
        (JobRestartOptions(batch_wait="soon"), ["BatchWait must be a duration"]),
        (JobRestartOptions(groups=["nope"]), ["Group 'nope' is not a task group"]),
        (JobRestartOptions(tasks=["side"]), ["Task 'side' is not in group 'g'"]),
        (JobRestartOptions(tasks=["t"], all_tasks=True), ["Tasks cannot be named with AllTasks"]),
        (JobRestartOptions(tasks=["t"], reschedule=True), ["Tasks cannot be named with Reschedule"]),
        (JobRestartOptions(on_error="retry"), ["OnError must be"]),
        (
            JobRestartOptions(batch_size=0, batch_wait=-1, groups=["nope"], on_error="x"),
            ["BatchSize", "BatchWait", "Group 'nope'", "OnError"],
        ),
    ],
)
def test_start_refuses_with_every_problem(
    cluster: Cluster, opts: JobRestartOptions, problems: list[str]
) -> None:
    _cluster(cluster)
    with pytest.raises(Invalid) as e:
        jobrestarts.start(cluster.reads, "default", "web", opts, NOW)
    lines = e.value.message.splitlines()
    assert lines[0] == "Restart is invalid:" and len(lines) == 1 + len(problems)
    for line, p in zip(lines[1:], problems, strict=True):
        assert p in line


def test_tasks_named_in_the_groups_chosen(cluster: Cluster) -> None:
    _cluster(cluster)
    opts = JobRestartOptions(groups=["api"], tasks=["side", "t"])
    r = jobrestarts.start(cluster.reads, "default", "web", opts, NOW).restart
    assert r is not None and r.tasks == ["side", "t"] and r.groups == ["api"]


def test_start_conflicts(cluster: Cluster) -> None:
    with pytest.raises(NotFound):
        jobrestarts.start(cluster.reads, "default", "web", JobRestartOptions(), NOW)
    _cluster(cluster)
    cluster.state.upsert_deployment(Deployment(id="d1", job_id="web", status="running"))
    with pytest.raises(Conflict, match=r"active deployment \(d1\)"):
        jobrestarts.start(cluster.reads, "default", "web", JobRestartOptions(), NOW)
    cluster.state.upsert_deployment(Deployment(id="d1", job_id="web", status="successful"))
    cluster.state.upsert_job_restart(JobRestart(id="r0", job_id="web", status="complete"))
    jobrestarts.start(cluster.reads, "default", "web", JobRestartOptions(), NOW)  # ended ones do not count
    cluster.state.upsert_job_restart(JobRestart(id="r1", job_id="web", status="paused"))
    with pytest.raises(Conflict, match=r"being restarted already \(r1, paused\)"):
        jobrestarts.start(cluster.reads, "default", "web", JobRestartOptions(), NOW)
    cluster.add(_two_groups().model_copy(update={"stop": True}))
    with pytest.raises(Conflict, match="stopped"):
        jobrestarts.start(cluster.reads, "default", "web", JobRestartOptions(), NOW)


@pytest.mark.parametrize(
    ("command", "status", "refusal", "new_status"),
    [
        (jobrestarts.pause, "running", "", "paused"),
        (jobrestarts.pause, "paused", "can't pause a paused restart", ""),
        (jobrestarts.pause, "complete", "can't pause a complete restart", ""),
        (jobrestarts.resume, "paused", "", "running"),
        (jobrestarts.resume, "running", "can't resume a running restart", ""),
        (jobrestarts.resume, "cancelled", "can't resume a cancelled restart", ""),
        (jobrestarts.cancel, "running", "", "cancelled"),
        (jobrestarts.cancel, "paused", "", "cancelled"),
        (jobrestarts.cancel, "failed", "can't cancel a failed restart", ""),
    ],
)
def test_pause_resume_cancel(
    cluster: Cluster, command: Any, status: str, refusal: str, new_status: str
) -> None:
    _cluster(cluster)
    cluster.state.upsert_job_restart(JobRestart(id="r1", job_id="web", status=status))
    if refusal:
        with pytest.raises(Invalid, match=refusal):
            command(cluster.reads, "default", "web", "r1", NOW)
        return
    (update,) = (e.event for e in command(cluster.reads, "default", "web", "r1", NOW).events)
    assert isinstance(update, JobRestartUpdated) and update.status == new_status and update.restart_id == "r1"


def test_an_unknown_restart_or_another_job_s_is_not_found(cluster: Cluster) -> None:
    _cluster(cluster)
    cluster.state.upsert_job_restart(JobRestart(id="r1", job_id="other"))
    for restart_id in ("r1", "nope"):
        with pytest.raises(NotFound):
            jobrestarts.pause(cluster.reads, "default", "web", restart_id, NOW)
