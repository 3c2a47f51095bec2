"""Evals created or updated (status, blocked, follow-ups), and how any event that carries evals
writes them."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from drover.model.evaluation import JOB_CHANGE_TRIGGERS, Evaluation
from drover.model.events.base import Event, Reads

if TYPE_CHECKING:
    from drover.model.statewriter import StateWriter


class EvalsUpserted(Event):
    """Evals created or updated, in one batch; on the stream `stream_name` (`evals`, or a
    dispatch's idempotency stream)."""

    type: Literal["EvalsUpserted"] = "EvalsUpserted"
    nomad_event_type: ClassVar[str | None] = "EvaluationUpdated"
    evals: list[Evaluation]
    stream_name: str = "evals"

    def stream(self) -> str:
        return self.stream_name

    def apply_to(self, state: StateWriter, index: int) -> None:
        upsert_evals(state, index, self.evals)

    def reads(self, r: Reads) -> None:
        reads_evals(r, self.evals)

    def evals_made(self) -> list[Evaluation]:
        return self.evals


def reads_evals(r: Reads, evals: list[Evaluation]) -> None:
    """What `upsert_evals` reads: the evals, and the job of a new eval of a change to it."""
    r.evals.extend(e.id for e in evals)
    r.jobs.extend((e.namespace, e.job_id) for e in evals if e.triggered_by in JOB_CHANGE_TRIGGERS)


def upsert_evals(state: StateWriter, index: int, evals: list[Evaluation]) -> None:
    """Write `evals` as of `index` (CreateIndex kept from the eval they update)."""
    for e in evals:
        old = state.eval(e.id)
        update: dict[str, object] = {
            "create_index": old.create_index if old else index,
            "modify_index": index,
        }
        if not e.job_modify_index:
            update["job_modify_index"] = _job_modify_index(state, e, old)
        state.upsert_eval(e.model_copy(update=update))


def _job_modify_index(state: StateWriter, e: Evaluation, old: Evaluation | None) -> int:
    """An eval given none: an update of the eval keeps the one it had; a new eval of a change to
    its job (appended with it, after it) takes the job's, known only now (none once purged)."""
    if old is not None:
        return old.job_modify_index
    if e.triggered_by not in JOB_CHANGE_TRIGGERS:
        return 0
    job = state.job(e.namespace, e.job_id)
    return job.job_modify_index if job is not None else 0
