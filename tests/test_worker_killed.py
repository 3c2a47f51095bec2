"""A worker killed (SIGKILL) while it holds an eval: another worker schedules the eval one ack
wait after the dead worker's last in-progress beat - the default DROVER_EVAL_ACK_WAIT, seconds -
rather than after the 60 s the workers' consumers used to wait."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from nats.js import JetStreamContext

from drover.runtime.bus import EVALS_STREAM
from drover.runtime.settings import Settings

from .cluster import Cluster, job_json, node_json
from .test_e2e import live

ACK_WAIT = Settings.model_fields["eval_ack_wait"].default
# The eval comes back at most one ack wait after the kill, and is then scheduled in well under a
# second on an idle host; the rest is margin for a loaded one. The consumers' old ack wait was
# 60 s.
BOUND = 25.0


async def test_the_eval_of_a_killed_worker_is_scheduled_by_another_within_seconds(
    database_url: str, nats_url: str, tmp_path: Path, js_fresh: JetStreamContext, store: Any
) -> None:
    assert ACK_WAIT <= BOUND / 2
    # The default ack wait, not the test cluster's short one.
    c = Cluster(
        database_url, nats_url, tmp_path, workers=1, env={"DROVER_EVAL_ACK_WAIT": str(ACK_WAIT)}
    ).start()
    try:
        for i in range(5):
            c.put("/v1/drover/node/register", {"Node": node_json(f"node-{i}")})

        async def held() -> int:
            return int((await js_fresh.consumer_info(EVALS_STREAM, "workers")).num_ack_pending)

        async def none_held() -> int:
            """Wait until every eval taken is acked (a moment after its allocs are written)."""
            deadline = time.monotonic() + 10
            while (pending := await held()) != 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            return pending

        c.put("/v1/jobs", job_json("warmup", 1))
        c.wait(lambda: len(live(c, "warmup")) == 1, timeout=30)
        assert await none_held() == 0  # the eval held next is web's

        # No plan applier: the worker that takes the eval holds it, its plan unanswered.
        c.kill("planner")
        c.put("/v1/jobs", job_json("web", 3))
        deadline = time.monotonic() + 30
        while await held() < 1:
            assert time.monotonic() < deadline, "the worker never took the eval"
            await asyncio.sleep(0.1)
        c.spawn("worker")
        second = tmp_path / "worker-1.log"
        c.wait(lambda: "taking evals" in second.read_text(), timeout=60, describe=c.logs)

        c.kill("worker", 0)
        killed = time.monotonic()
        c.spawn("planner")
        c.wait(lambda: len(live(c, "web")) == 3, timeout=BOUND + 30)
        took = time.monotonic() - killed
        assert took < BOUND, f"placed {took:.1f} s after its worker was killed"
        assert "of web delivered again (delivery 2)" in second.read_text()
        assert await none_held() == 0
    finally:
        c.stop()
