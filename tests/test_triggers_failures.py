"""The eval triggers (TriggeredBy) that come from scheduling going wrong, caused for real end to end:

- failed-follow-up: workers holding an eval are killed until it reaches the delivery limit; the
  leader reaps it from the failed queue, failed, with a delayed follow-up eval.
- max-plan-attempts: two workers schedule against the same state, on a node with room for one
  plan; the plan applier refuses the second, its eval fails with a blocked eval.

In both, the plan applier is started late, so the workers are mid-eval (waiting for it) at a
known moment: that is the timing the tests control, not the failure itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from drover.model.durations import SECOND
from drover.runtime.bus import EVALS_STREAM

from .cluster import Cluster, job_json, nats_options, node_json

WORKERS_CONSUMER = "workers"


def consumer(nats_url: str, durable: str = WORKERS_CONSUMER) -> tuple[int, int]:
    """(deliveries so far, messages delivered and not yet acked) of the workers' consumer."""

    async def read() -> tuple[int, int]:
        nc = await nats.connect(nats_url, **nats_options())
        try:
            info = await nc.jetstream().consumer_info(EVALS_STREAM, durable)
            return info.delivered.consumer_seq or 0, info.num_ack_pending or 0
        finally:
            await nc.close()

    return asyncio.run(read())


def wait_consumer(c: Cluster, nats_url: str) -> tuple[int, int]:
    """The workers' consumer once a worker has created it."""

    def read() -> tuple[int, int] | None:
        try:
            return consumer(nats_url)
        except Exception:
            return None

    found: tuple[int, int] = c.wait(read, timeout=30, interval=0.1)
    return found


@pytest.fixture
def cluster_factory(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Any]:
    made: list[Cluster] = []

    def make(**kw: Any) -> Cluster:
        c = Cluster(database_url, nats_url, tmp_path, **kw).start()
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


def test_failed_follow_up_after_workers_die_holding_an_eval(cluster_factory: Any, nats_url: str) -> None:
    env = {
        "DROVER_EVAL_ACK_WAIT": "1",
        "DROVER_EVAL_FAILED_FOLLOWUP_BASELINE_DELAY": "2",
        "DROVER_EVAL_FAILED_FOLLOWUP_DELAY_RANGE": "1",
    }
    c: Cluster = cluster_factory(workers=1, planners=0, env=env)
    c.put("/v1/drover/node/register", {"Node": node_json("n1")})
    base, _ = wait_consumer(c, nats_url)
    eval_id = c.put("/v1/jobs", job_json("web", 1))["EvalID"]

    # Each worker takes the eval and waits for the plan applier (there is none yet); killed, it
    # never acks, and the eval is handed out again after the ack wait.
    for delivery in (1, 2, 3):
        c.wait(lambda d=delivery: consumer(nats_url)[0] >= base + d, timeout=30, interval=0.1)  # type: ignore[misc]
        c.kill("worker", delivery - 1)
        c.spawn("worker")
    # The fourth delivery is past the limit: the worker moves the eval to the failed queue, the
    # leader reaps it.
    failed = c.wait(lambda: (e := c.get(f"/v1/evaluation/{eval_id}"))["Status"] == "failed" and e, timeout=30)
    assert failed["StatusDescription"] == "evaluation reached delivery limit (3)"
    assert failed["TriggeredBy"] == "job-register"
    follow_id = failed["NextEval"]
    assert follow_id
    follow = c.get(f"/v1/evaluation/{follow_id}")
    assert follow["TriggeredBy"] == "failed-follow-up"
    assert follow["Status"] == "pending"
    assert follow["PreviousEval"] == eval_id and follow["JobID"] == "web"
    # The server's delay: 2 s plus a random share of 1 s.
    assert 2 * SECOND <= follow["Wait"] < 3 * SECOND
    assert follow["WaitUntil"] == follow["CreateTime"] + follow["Wait"]
    assert follow["CreateTime"] == failed["ModifyTime"]
    assert "reached its delivery limit" in (c.log_dir / "leader-0.log").read_text()

    # With a plan applier, the follow-up is scheduled once its delay has passed.
    c.spawn("planner")
    done = c.wait(
        lambda: (e := c.get(f"/v1/evaluation/{follow_id}"))["Status"] == "complete" and e, timeout=30
    )
    assert done["ModifyTime"] >= follow["WaitUntil"]
    (alloc,) = c.get("/v1/job/web/allocations")
    assert alloc["EvalID"] == follow_id and alloc["NodeID"] == "n1"
    assert sorted(e["ID"] for e in c.get("/v1/job/web/evaluations")) == sorted([eval_id, follow_id])


def test_max_plan_attempts_after_two_workers_race_for_one_node(cluster_factory: Any, nats_url: str) -> None:
    c: Cluster = cluster_factory(workers=2, planners=0, env={"DROVER_PLAN_ATTEMPTS": "1"})
    c.put("/v1/drover/node/register", {"Node": node_json("only", cpu=1000)})
    wait_consumer(c, nats_url)
    regs = {j: c.put("/v1/jobs", job_json(j, 1, cpu=800))["EvalID"] for j in ("a", "b")}
    # Both workers hold an eval: each schedules against the same state (nothing can commit
    # without a plan applier) and places its job on the only node.
    c.wait(lambda: consumer(nats_url)[1] == 2, timeout=30, interval=0.1)
    c.spawn("planner")

    def outcome() -> dict[str, dict[str, Any]] | None:
        evals = {j: c.get(f"/v1/evaluation/{e}") for j, e in regs.items()}
        return evals if all(e["Status"] in ("complete", "failed") for e in evals.values()) else None

    evals = c.wait(outcome, timeout=30)
    (winner,) = [j for j, e in evals.items() if e["Status"] == "complete"]
    (loser,) = [j for j, e in evals.items() if e["Status"] == "failed"]
    failed = evals[loser]
    assert failed["StatusDescription"] == "maximum attempts reached (1)"
    assert failed["NextEval"] == "" and failed["BlockedEval"]
    blocked = c.get(f"/v1/evaluation/{failed['BlockedEval']}")
    assert blocked["TriggeredBy"] == "max-plan-attempts"
    assert blocked["Status"] == "blocked"
    assert blocked["StatusDescription"] == "created due to placement conflicts"
    assert blocked["PreviousEval"] == failed["ID"] and blocked["JobID"] == loser
    assert [a["NodeID"] for a in c.get(f"/v1/job/{winner}/allocations")] == ["only"]
    assert c.get(f"/v1/job/{loser}/allocations") == []

    # Room again: the blocked eval is released and places the job.
    c.http.delete(f"/v1/job/{winner}").raise_for_status()
    c.wait(
        lambda: c.get(f"/v1/evaluation/{blocked['ID']}")["Status"] == "complete",
        timeout=30,
        describe=lambda: c.get(f"/v1/job/{loser}/evaluations"),
    )
    (alloc,) = c.get(f"/v1/job/{loser}/allocations")
    assert alloc["EvalID"] == blocked["ID"] and alloc["NodeID"] == "only"
