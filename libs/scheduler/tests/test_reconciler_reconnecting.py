"""Which of a reconnecting alloc and its replacement keeps running
(`drover.scheduler.reconciler.reconnecting`), table by table: each `disconnect.reconcile`
option, the placement scores and start times they compare, the replacement chain."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import (
    Allocation,
    AllocMetric,
    AllocState,
    NodeScoreMeta,
    Task,
    TaskGroup,
    TaskState,
)
from drover.model.alloc import ALLOC_STATE_FIELD_CLIENT_STATUS
from drover.model.durations import SECOND
from drover.scheduler.reconciler.reconnecting import (
    last_start,
    pick_reconnecting,
    placement_score,
    reconnect_score_ids,
    replacement_chain,
)

T0 = 1_700_000_000_000_000_000
S = SECOND
TG = TaskGroup(name="g", tasks=[Task(name="main"), Task(name="side")])
TG_LEADER = TaskGroup(name="g", tasks=[Task(name="main"), Task(name="side", leader=True)])


def started(main: int = 0, side: int = 0, *, restarted: int = 0) -> dict[str, TaskState]:
    """Task states: each task's start time (0: not started); `restarted`: main's last restart."""
    out = {}
    if main:
        out["main"] = TaskState(
            state="running", started_at=main, restarts=1 if restarted else 0, last_restart=restarted
        )
    if side:
        out["side"] = TaskState(state="running", started_at=side)
    return out


def alloc(alloc_id: str, *, score: float | None = None, **kw: Any) -> Allocation:
    kw.setdefault("client_status", "running")
    if score is not None:
        kw["metrics"] = AllocMetric(score_meta_data=[NodeScoreMeta(node_id="n", norm_score=score)])
    return Allocation(id=alloc_id, name="web.g[0]", job_id="web", task_group="g", **kw)


def score_of(a: Allocation) -> float | None:
    return placement_score(a, {})


@pytest.mark.parametrize(
    ("reconcile", "orig", "repl", "keeps"),
    [
        # A replacement of a newer job version always wins, whatever the option.
        ("keep_original", {"job_version": 1}, {"job_version": 2}, "replacement"),
        ("keep_original", {"job_version": 2}, {"job_version": 1}, "original"),
        ("keep_original", {}, {}, "original"),
        ("keep_replacement", {}, {}, "replacement"),
        # best_score: the higher placement score...
        ("best_score", {"score": 0.5}, {"score": 0.7}, "replacement"),
        ("best_score", {"score": 0.7}, {"score": 0.5}, "original"),
        ("best_score", {"score": 0.5}, {"score": 0.5}, "original"),
        # ...a score over none, none over none the original...
        ("best_score", {}, {"score": 0.1}, "replacement"),
        ("best_score", {"score": 0.1}, {}, "original"),
        ("best_score", {}, {}, "original"),
        # ...but never a running original for a replacement not running.
        ("best_score", {"score": 0.1}, {"score": 0.9, "client_status": "pending"}, "original"),
        (
            "best_score",
            {"score": 0.1, "client_status": "unknown"},
            {"score": 0.9, "client_status": "pending"},
            "replacement",
        ),
        # longest_running: the earlier (last) start; never started loses; neither: best_score.
        ("longest_running", {"task_states": started(T0)}, {"task_states": started(T0 + S)}, "original"),
        ("longest_running", {"task_states": started(T0 + S)}, {"task_states": started(T0)}, "replacement"),
        ("longest_running", {"task_states": started(T0)}, {"task_states": started(T0)}, "replacement"),
        ("longest_running", {}, {"task_states": started(T0)}, "replacement"),
        ("longest_running", {"task_states": started(T0)}, {}, "original"),
        ("longest_running", {"score": 0.2}, {"score": 0.3}, "replacement"),
        ("longest_running", {"score": 0.3}, {"score": 0.2}, "original"),
        # A restart counts from its time: the original restarted after the replacement started.
        (
            "longest_running",
            {"task_states": started(T0, restarted=T0 + 5 * S)},
            {"task_states": started(T0 + S)},
            "replacement",
        ),
    ],
)
def test_pick_reconnecting(reconcile: str, orig: dict[str, Any], repl: dict[str, Any], keeps: str) -> None:
    o, r = alloc("orig", **orig), alloc("repl", **repl)
    picked = pick_reconnecting(reconcile, o, r, TG, score_of)
    assert picked is (o if keeps == "original" else r)


@pytest.mark.parametrize(
    ("tg", "states", "expected"),
    [
        (TG, {}, 0),
        (TG, started(T0 + S, T0), T0),  # the oldest task
        (TG, started(T0, restarted=T0 + 9 * S), T0 + 9 * S),  # its last restart
        (TG, started(0, T0 + 2 * S), T0 + 2 * S),
        (TG_LEADER, started(T0, T0 + 3 * S), T0 + 3 * S),  # the leader's, not the oldest
        (TG_LEADER, started(T0), 0),  # the leader never started
        (None, started(T0), 0),
    ],
)
def test_last_start(tg: TaskGroup | None, states: dict[str, TaskState], expected: int) -> None:
    assert last_start(alloc("a", task_states=states), tg) == expected


@pytest.mark.parametrize(
    ("scores", "metrics", "expected"),
    [
        ({}, None, None),
        ({}, [0.2, 0.6], 0.6),  # the best of the metrics' node scores
        ({"a": 0.4}, [0.9], 0.4),  # handed in: the state holds no metrics for it
        ({"b": 0.4}, [], None),
    ],
)
def test_placement_score(
    scores: dict[str, float], metrics: list[float] | None, expected: float | None
) -> None:
    m = (
        None
        if metrics is None
        else AllocMetric(score_meta_data=[NodeScoreMeta(norm_score=s) for s in metrics])
    )
    assert placement_score(alloc("a", metrics=m), scores) == expected


def unknown_since(t: int) -> list[AllocState]:
    return [AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value="unknown", time=t)]


def test_replacement_chain_follows_failed_replacements_and_stops_at_a_loop() -> None:
    group = {
        "o": alloc("o", next_allocation="r1"),
        "r1": alloc("r1", client_status="failed", desired_status="stop", next_allocation="r2"),
        "r2": alloc("r2", next_allocation="o"),  # a loop must not hang it
        "x": alloc("x"),
    }
    assert [a.id for a in replacement_chain(group["o"], group)] == ["r1", "r2"]
    assert replacement_chain(group["x"], group) == []
    # A replacement already collected ends the chain.
    assert replacement_chain(alloc("y", next_allocation="gone"), group) == []


def test_reconnect_score_ids_names_each_reconnecting_alloc_and_its_replacements() -> None:
    allocs = [
        alloc("o", alloc_states=unknown_since(T0), client_status="unknown", next_allocation="r1"),
        alloc("r1", client_status="failed", desired_status="stop", next_allocation="r2"),
        alloc("r2"),
        alloc("plain"),
        # Reconnected already (running recorded after unknown): nothing to compare.
        alloc(
            "back",
            alloc_states=[
                *unknown_since(T0),
                AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value="running", time=T0 + S),
            ],
            next_allocation="plain",
        ),
        # Stopped by the servers: it will not be kept whatever its score.
        alloc("gone", alloc_states=unknown_since(T0), desired_status="stop", next_allocation="plain"),
    ]
    assert reconnect_score_ids(allocs) == {"o", "r1", "r2"}
