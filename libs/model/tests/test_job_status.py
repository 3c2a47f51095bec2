"""Job Status derived as Nomad derives it (from the job's allocs and evals)."""

from __future__ import annotations

import pytest

from drover.model import Job
from drover.model.job import PeriodicConfig, derive_job_status

SERVICE = Job(id="web", type="service")


@pytest.mark.parametrize(
    ("job", "has_allocs", "live_allocs", "has_evals", "live_evals", "want"),
    [
        (SERVICE, False, False, False, False, "pending"),  # just registered, nothing yet
        (SERVICE, False, False, True, True, "pending"),  # eval pending or blocked
        (SERVICE, True, True, True, False, "running"),  # a live alloc
        (SERVICE, True, True, True, True, "running"),  # live alloc wins over a pending eval
        (SERVICE, True, False, True, False, "dead"),  # everything terminal
        (SERVICE, True, False, True, True, "pending"),  # all allocs done, a new eval waits
        (SERVICE, False, False, True, False, "dead"),  # evals done, nothing placed
        (SERVICE.model_copy(update={"stop": True}), False, False, False, False, "dead"),
        (SERVICE.model_copy(update={"stop": True}), True, True, True, False, "running"),  # stopping
        (Job(id="sys", type="system"), False, False, False, False, "running"),
        (Job(id="sys", type="system", stop=True), True, True, True, False, "dead"),
        (
            Job(id="cron", type="batch", periodic=PeriodicConfig(spec="* * * * *")),
            False,
            False,
            False,
            False,
            "running",
        ),
        (Job(id="b", type="batch"), True, False, True, False, "dead"),  # batch finished
        (Job(id="b", type="batch"), True, True, True, False, "running"),
    ],
)
def test_job_status(
    job: Job, has_allocs: bool, live_allocs: bool, has_evals: bool, live_evals: bool, want: str
) -> None:
    got = derive_job_status(
        job, has_allocs=has_allocs, live_allocs=live_allocs, has_evals=has_evals, live_evals=live_evals
    )
    assert got == want
