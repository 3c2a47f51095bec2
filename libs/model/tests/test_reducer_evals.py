"""The reducer's JobModifyIndex on evals: an eval made with a change to its job (register,
deregister, scaling, a periodic launch) carries the job's index once applied, as Nomad's do;
a node's or a deployment's eval carries none; an index given is kept, and an update of the eval
keeps the one it had."""

from __future__ import annotations

import pytest

from drover.model import Job, Task, TaskGroup
from drover.model.evaluation import (
    TRIGGER_DEPLOYMENT_WATCHER,
    TRIGGER_JOB_DEREGISTER,
    TRIGGER_JOB_REGISTER,
    TRIGGER_NODE_UPDATE,
    TRIGGER_PERIODIC_JOB,
    TRIGGER_SCALING,
    Evaluation,
    job_eval,
)
from drover.model.events import EvalsUpserted, JobDeregistered, JobRegistered
from drover.model.reducer import apply
from drover.model.state import InMemoryState

JOB = Job(id="web", task_groups=[TaskGroup(name="g", count=1, tasks=[Task(name="t", driver="mock")])])


def _registered() -> InMemoryState:
    state = InMemoryState()
    apply(state, 10, JobRegistered(job=JOB))
    return state


def _eval_after(state: InMemoryState, index: int, evaluation: Evaluation) -> Evaluation:
    apply(state, index, EvalsUpserted(evals=[evaluation]))
    got = state.eval(evaluation.id)
    assert got is not None
    return got


@pytest.mark.parametrize(
    ("trigger", "given", "want"),
    [
        (TRIGGER_JOB_REGISTER, 0, 10),
        (TRIGGER_SCALING, 0, 10),
        (TRIGGER_PERIODIC_JOB, 0, 10),
        (TRIGGER_NODE_UPDATE, 0, 0),
        (TRIGGER_DEPLOYMENT_WATCHER, 0, 0),
        (TRIGGER_JOB_REGISTER, 7, 7),  # given: kept
        (TRIGGER_NODE_UPDATE, 7, 7),
    ],
)
def test_a_new_evals_job_modify_index(trigger: str, given: int, want: int) -> None:
    state = _registered()
    evaluation = job_eval(JOB, trigger, 0, job_modify_index=given)
    assert _eval_after(state, 11, evaluation).job_modify_index == want


def test_a_deregister_eval_carries_the_deregister_and_none_once_purged() -> None:
    state = _registered()
    apply(state, 11, JobDeregistered(namespace="default", job_id="web"))
    assert _eval_after(state, 12, job_eval(JOB, TRIGGER_JOB_DEREGISTER, 0)).job_modify_index == 11
    apply(state, 13, JobDeregistered(namespace="default", job_id="web", purge=True))
    assert _eval_after(state, 14, job_eval(JOB, TRIGGER_JOB_DEREGISTER, 0)).job_modify_index == 0


def test_an_update_of_the_eval_keeps_its_index_after_the_job_moves_on() -> None:
    state = _registered()
    evaluation = job_eval(JOB, TRIGGER_JOB_REGISTER, 0)
    assert _eval_after(state, 11, evaluation).job_modify_index == 10
    apply(state, 12, JobRegistered(job=JOB.model_copy(update={"version": 1})))
    # as a worker writes it back, without the index
    done = evaluation.model_copy(update={"status": "complete"})
    got = _eval_after(state, 13, done)
    assert (got.job_modify_index, got.status, got.create_index, got.modify_index) == (10, "complete", 11, 13)
