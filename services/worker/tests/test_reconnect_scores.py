"""The worker's placement scores for a best_score reconnect, without a database: read only for
jobs with allocs to reconnect, and only for those allocs and their replacements."""

from __future__ import annotations

from drover.model import Allocation, AllocMetric, AllocState, Evaluation, NodeScoreMeta
from drover.model.alloc import ALLOC_STATE_FIELD_CLIENT_STATUS
from drover.model.state import InMemoryState
from drover.worker.scores import reconnect_scores

UNKNOWN = [AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value="unknown", time=1)]


def scored(a: Allocation, score: float) -> Allocation:
    return a.model_copy(update={"metrics": AllocMetric(score_meta_data=[NodeScoreMeta(norm_score=score)])})


class Projections:
    """The projections' allocs, with their metrics; counts the reads."""

    def __init__(self, allocs: list[Allocation]) -> None:
        self.allocs = {a.id: a for a in allocs}
        self.asked: list[list[str]] = []

    def __call__(self, ids: list[str]) -> dict[str, Allocation]:
        self.asked.append(ids)
        return {i: self.allocs[i] for i in ids if i in self.allocs}


def allocs() -> list[Allocation]:
    return [
        Allocation(
            id="o",
            job_id="web",
            task_group="g",
            client_status="running",
            alloc_states=UNKNOWN,
            next_allocation="r",
        ),
        Allocation(id="r", job_id="web", task_group="g", client_status="running", previous_allocation="o"),
        Allocation(id="x", job_id="web", task_group="g", client_status="running"),
    ]


async def test_scores_of_the_reconnecting_allocs_and_their_replacements_are_read() -> None:
    state = InMemoryState(drop_metrics=True)
    for a in allocs():
        state.upsert_alloc(a)
    projections = Projections([scored(a, s) for a, s in zip(allocs(), (0.3, 0.6, 0.9), strict=True)])
    scores = await reconnect_scores(state, Evaluation(id="e", job_id="web", type="service"), projections)
    assert scores == {"o": 0.3, "r": 0.6}
    assert projections.asked == [["o", "r"]]


async def test_nothing_is_read_without_allocs_to_reconnect() -> None:
    state = InMemoryState(drop_metrics=True)
    state.upsert_alloc(allocs()[2])
    projections = Projections([])
    assert await reconnect_scores(state, Evaluation(id="e", job_id="web", type="service"), projections) == {}
    assert await reconnect_scores(state, Evaluation(id="e", job_id="web", type="system"), projections) == {}
    assert projections.asked == []
