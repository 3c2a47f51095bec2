"""The broker's queue depths by lane and state (what `GET /v1/metrics` shows of the broker)."""

from __future__ import annotations

from drover.model import Evaluation
from drover.model.durations import SECOND
from drover.scheduler.broker import EvalBroker
from drover.scheduler.lanes import SMALL_EVAL

NOW = 1_000_000_000_000


def evaluation(eid: str, job: str, idx: int, status: str = "pending", **kw: object) -> Evaluation:
    return Evaluation(id=eid, job_id=job, create_index=idx, modify_index=idx, status=status, **kw)  # type: ignore[arg-type]


def test_depths_follow_evals_from_ready_to_unacked_and_blocked_and_waiting() -> None:
    b = EvalBroker(window=1)
    assert set(b.depths().values()) == {0}
    b.upsert(evaluation("a1", "a", 1), NOW)
    b.upsert(evaluation("b1", "b", 2), NOW, cost=SMALL_EVAL + 1)
    b.upsert(evaluation("c1", "c", 3, status="blocked"), NOW)
    b.upsert(evaluation("d1", "d", 4, wait_until=NOW + SECOND), NOW)
    d = b.depths()
    assert (d[("small", "ready")], d[("large", "ready")]) == (1, 1)
    assert (d[("small", "blocked")], d[("small", "waiting")], d[("small", "unacked")]) == (1, 1, 0)
    # A window of one: the small eval goes out first, the large one stays ready.
    assert [e.id for e in b.due(NOW).dispatch] == ["a1"]
    d = b.depths()
    assert (d[("small", "unacked")], d[("small", "ready")], d[("large", "ready")]) == (1, 0, 1)
    # Finished: out of the queue; the delayed eval comes due and is ready.
    b.upsert(evaluation("a1", "a", 5, status="complete"), NOW)
    b.due(NOW + 2 * SECOND)
    d = b.depths()
    assert d[("small", "waiting")] == 0
    assert d[("small", "unacked")] + d[("large", "unacked")] == 1
    assert sum(d.values()) == 3  # b1 and d1 (one out, one ready) and c1 blocked
