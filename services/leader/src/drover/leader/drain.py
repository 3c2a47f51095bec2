"""The node drainer loop: allocs on draining nodes marked to migrate in batches of
migrate.max_parallel, with node-drain evals (drover.control.leader.drainer), and the drain cleared
when a node is empty."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from drover.control.leader.drainer import drain_step
from drover.model.alloc import DesiredTransition
from drover.model.events import AllocsTransitioned, Event, NodeDrainUpdated
from drover.runtime.leader import Leader
from drover.runtime.replica import Replica
from drover.runtime.store import NewEvent

log = logging.getLogger("drover.leader")


async def drain(replica: Replica, leader: Leader) -> None:
    """Move allocs off draining nodes, a batch at a time, until each node is empty; until
    `leader.stop`."""
    while not leader.stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(leader.stop.wait(), 0.5)
        now = time.time_ns()
        events: list[Event] = []
        for node in list(replica.state.all_nodes()):
            if node.drain_strategy is None:
                continue
            step = drain_step(replica.state, node, now)
            if step.done:
                log.info("node %s drained", node.id)
                events.append(NodeDrainUpdated(node_id=node.id, drain_strategy=None))
            elif step.migrate:
                log.info("node %s: migrating %d allocs", node.id, len(step.migrate))
                events.append(
                    AllocsTransitioned(
                        transitions={a.id: DesiredTransition(migrate=True) for a in step.migrate},
                        evals=step.evals,
                    )
                )
        if not events:
            continue
        recorded = await leader.try_append([NewEvent(e) for e in events], "drainer")
        if recorded is None:
            continue
        # The next step must see these marks, or it would mark the same allocs again.
        await replica.wait_for(recorded[-1].position)
