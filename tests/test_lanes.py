"""Worker lanes, end to end: with three workers, large evals go to the large-lane worker, which
runs at a lower CPU priority, and small evals to the other two; each lane takes the other's
work when it has no worker of its own; a large-lane worker of depth two holds two large evals at
once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from nats.js import JetStreamContext

from drover.runtime.bus import EVALS_STREAM

from .cluster import Cluster, job_json, node_json
from .invariants import check_log
from .test_e2e import live


def nice_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


async def delivered(js: JetStreamContext) -> dict[str, int]:
    """Evals each lane's consumer has handed out so far."""
    out = {}
    for durable in ("workers", "workers-large"):
        info = await js.consumer_info(EVALS_STREAM, durable)
        out[durable] = info.delivered.consumer_seq
    return out


def placed(c: Cluster, job: str, count: int) -> Any:
    c.put("/v1/jobs", job_json(job, count, cpu=10, mem=10))
    c.wait(lambda: len(live(c, job)) == count, timeout=15, describe=lambda: f"{job}: {len(live(c, job))}")


async def test_large_and_small_evals_go_to_their_lanes(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: JetStreamContext
) -> None:
    c = Cluster(database_url, nats_url, tmp_path, workers=3).start()
    try:
        for i in range(20):
            c.put("/v1/drover/node/register", {"Node": node_json(f"node-{i}")})
        workers = c.procs["worker"]
        # One large-lane worker (by default; it takes two large evals at once) at nice 10.
        c.wait(lambda: [nice_of(p.pid) for p in workers] == [10, 0, 0])

        placed(c, "warmup", 1)  # every worker has made its consumers by now
        before = await delivered(js_fresh)
        placed(c, "big", 150)
        placed(c, "small", 5)
        after = await delivered(js_fresh)
        assert after["workers-large"] - before["workers-large"] == 1  # the 150-alloc job's eval
        assert after["workers"] - before["workers"] == 1  # the 5-alloc job's

        # No small-lane worker: the large-lane worker takes the small eval.
        c.kill("worker", 1)
        c.kill("worker", 2)
        placed(c, "small-2", 5)
        # No large-lane worker either: a small-lane worker takes the large eval.
        c.kill("worker", 0)
        c.extra_env["DROVER_WORKER_LANE"] = "small"
        c.spawn("worker")
        placed(c, "big-2", 150)
        assert nice_of(c.procs["worker"][3].pid) == 0
    finally:
        c.stop()


async def test_a_large_lane_worker_of_depth_two_takes_two_large_evals_at_once(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: JetStreamContext, store: Any
) -> None:
    # DROVER_LARGE_LANE_DEPTH=2: the broker hands out two large evals at once (at once: no
    # quiet spell asked for after small evals), both to the large-lane worker, which schedules
    # the second while the first plan commits.
    c = Cluster(
        database_url,
        nats_url,
        tmp_path,
        workers=3,
        env={"DROVER_LARGE_LANE_DEPTH": "2", "DROVER_LARGE_LANE_QUIET": "0"},
    ).start()
    try:
        for i in range(40):
            c.put("/v1/drover/node/register", {"Node": node_json(f"node-{i}")})
        placed(c, "warmup", 1)
        before = await delivered(js_fresh)
        # The large-lane worker alone, and no plan applier: it holds each eval it takes, its
        # plan unanswered. Two held at once are two worked on at once; a worker taking one at a
        # time leaves the second in the stream.
        c.kill("worker", 1)
        c.kill("worker", 2)
        c.kill("planner")
        for j in range(4):
            c.put("/v1/jobs", job_json(f"big-{j}", 150, cpu=100, mem=64))

        async def large_held() -> Any:
            return await js_fresh.consumer_info(EVALS_STREAM, "workers-large")

        deadline = time.monotonic() + 30
        while (info := await large_held()).num_ack_pending < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert info.num_ack_pending == 2, f"the large-lane worker holds {info.num_ack_pending} evals"
        # Held, not just handed out: a message the worker fetched and left unworked gets no
        # in-progress beats and is handed out again after the ack wait (the cluster's: 3 s).
        await asyncio.sleep(4)
        info = await large_held()
        assert info.num_ack_pending == 2 and info.num_redelivered == 0, info

        c.spawn("planner")
        for j in range(4):
            c.wait(
                lambda j=j: len(live(c, f"big-{j}")) == 150, timeout=60, describe=lambda: "big jobs placed"
            )
        after = await delivered(js_fresh)
        assert after["workers-large"] - before["workers-large"] == 4
        assert after["workers"] == before["workers"]
    finally:
        c.stop()
    check_log(store)  # no node over-committed at any index, no alloc created twice
