"""The garbage collector's core evals (drover.control.leader.gccore): which are due, the passes each
runs, the appends that collect what a pass found (bounded, a job with its last eval), and the
eval done."""

from __future__ import annotations

import pytest

from drover.control.commands import system
from drover.control.leader import gccore
from drover.control.leader.gc import Collection, Thresholds
from drover.model import Allocation, Evaluation, Job
from drover.model.durations import HOUR, MINUTE, SECOND
from drover.model.evaluation import core_eval
from drover.model.events import (
    DeploymentsCollected,
    EvalsCollected,
    EvalsUpserted,
    JobCollected,
    JobRestartDeleted,
    NodesCollected,
)
from drover.model.state import InMemoryState

NOW = 1_700_000_000 * SECOND
INTERVAL = 5 * MINUTE
BIG = Thresholds(eval=HOUR, batch_eval=HOUR, job=HOUR, deployment=HOUR, node=HOUR, restart=HOUR)


def _collection(*items: tuple[str, object]) -> Collection:
    return Collection(items=list(items))


def test_a_pass_goes_in_appends_of_at_most_the_chunk() -> None:
    found = _collection(*(("alloc", f"a{i}") for i in range(5)), ("eval", "e1"), ("deployment", "d1"))
    appends = gccore.chunks(found, as_of=42, size=3)
    assert appends == [
        [EvalsCollected(allocs=["a0", "a1", "a2"])],
        [EvalsCollected(allocs=["a3", "a4"], evals=["e1"])],
        [DeploymentsCollected(deployments=["d1"])],
    ]


def test_a_job_goes_in_the_append_of_its_last_eval() -> None:
    """Never registered without the evals and allocs that make it dead: a job past the chunk
    rides with its last eval; a run of jobs without evals is split as anything else."""
    found = _collection(("alloc", "a"), ("eval", "e"), ("job", ("default", "web")), ("job", ("default", "x")))
    appends = gccore.chunks(found, as_of=7, size=2)
    assert appends == [
        [EvalsCollected(evals=["e"], allocs=["a"]), JobCollected(job_id="web", as_of=7)],
        [JobCollected(job_id="x", as_of=7)],
    ]
    jobs = _collection(*(("job", ("default", f"j{i}")) for i in range(5)))
    assert [len(a) for a in gccore.chunks(jobs, as_of=1, size=2)] == [2, 2, 1]


def test_nodes_and_restarts_collect_by_their_own_events() -> None:
    found = _collection(("node", "n1"), ("node", "n2"), ("restart", ("r1", "default", "web")))
    assert gccore.chunks(found, as_of=9, size=10) == [
        [
            NodesCollected(nodes=["n1", "n2"], as_of=9),
            JobRestartDeleted(restart_id="r1", namespace="default", job_id="web"),
        ]
    ]
    assert gccore.chunks(Collection(), as_of=9, size=10) == []


def _core(job_id: str, created: int, status: str = "complete") -> Evaluation:
    return core_eval(job_id, created).model_copy(update={"status": status})


def test_periodic_core_evals_are_due_every_interval() -> None:
    since = NOW - MINUTE  # this collector leads since
    # None yet: an interval after it began to lead.
    assert gccore.due([], {}, NOW, INTERVAL, since) == []
    due = gccore.due([], {}, since + INTERVAL, INTERVAL, since)
    assert [e.job_id for e in due] == list(gccore.PERIODIC)
    assert all(
        (e.type, e.triggered_by, e.status, e.namespace, e.priority)
        == ("_core", "scheduled", "pending", "-", 32767)
        for e in due
    )
    # The last one of each kind says when the next is due; one pending holds back another.
    seen = [
        _core("eval-gc", NOW - INTERVAL),
        _core("job-gc", NOW - INTERVAL + SECOND),
        _core("node-gc", NOW - 2 * INTERVAL, status="pending"),
        _core("deployment-gc", NOW - 10 * INTERVAL),
        _core("deployment-gc", NOW - SECOND),
        _core("job-restart-gc", NOW - 3 * INTERVAL),
        Evaluation(id="e", job_id="eval-gc", create_time=0),  # not a core eval
    ]
    last = gccore.latest(seen)
    assert last == {
        "eval-gc": NOW - INTERVAL,
        "job-gc": NOW - INTERVAL + SECOND,
        "node-gc": NOW - 2 * INTERVAL,
        "deployment-gc": NOW - SECOND,
        "job-restart-gc": NOW - 3 * INTERVAL,
    }
    assert [e.job_id for e in gccore.due(seen, last, NOW, INTERVAL, since)] == ["eval-gc", "job-restart-gc"]
    # Collected since (a forced collection takes them at once): their times still count.
    assert [e.job_id for e in gccore.due([], last, NOW, INTERVAL, since)] == [
        "eval-gc",
        "node-gc",
        "job-restart-gc",
    ]
    assert gccore.latest([_core("eval-gc", NOW)], last)["eval-gc"] == NOW


@pytest.mark.parametrize(
    ("job_id", "passes"),
    [
        ("eval-gc", ["eval-gc"]),
        ("job-restart-gc", ["job-restart-gc"]),
        ("force-gc", ["job-gc", "eval-gc", "deployment-gc", "job-restart-gc", "node-gc"]),
        ("bogus", []),
    ],
)
def test_the_passes_of_each_core_eval(job_id: str, passes: list[str]) -> None:
    assert gccore.passes(job_id) == passes


def test_a_forced_collection_needs_no_age() -> None:
    st = InMemoryState()
    st.upsert_job(Job(id="web", stop=True, submit_time=NOW - SECOND))
    st.upsert_eval(Evaluation(id="e", job_id="web", status="complete", modify_time=NOW - SECOND))
    st.upsert_alloc(Allocation(id="a", job_id="web", eval_id="e", desired_status="stop", modify_time=NOW))
    scheduled = gccore.find(st, core_eval("job-gc", NOW), "job-gc", NOW, BIG)
    forced = gccore.find(st, core_eval("force-gc", NOW), "job-gc", NOW, BIG)
    assert scheduled.items == []
    assert forced.items == [("alloc", "a"), ("eval", "e"), ("job", ("default", "web"))]


def test_a_core_eval_is_done_complete_or_failed_when_it_names_no_pass() -> None:
    done = gccore.finished(core_eval("eval-gc", NOW - SECOND), NOW)
    assert (done.status, done.modify_time, done.status_description) == ("complete", NOW, "")
    bogus = gccore.finished(core_eval("bogus", NOW - SECOND), NOW)
    assert (bogus.status, bogus.status_description) == ("failed", "core scheduler cannot handle job 'bogus'")


def test_force_is_one_pending_force_gc_core_eval() -> None:
    change = system.force_gc(NOW)
    (eval_,) = change.evals
    assert (eval_.job_id, eval_.type, eval_.triggered_by, eval_.status) == (
        "force-gc",
        "_core",
        "scheduled",
        "pending",
    )
    assert [type(e.event) for e in change.events] == [EvalsUpserted]
