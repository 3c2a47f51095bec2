"""The client's own half of `disconnect.stop_on_client_after` (Nomad's heartbeat stop): an
agent that has not had a heartbeat through to the servers for that long stops the group's
allocs itself, since the servers take them for lost by then and replace them once that time
(and the kill timeout) has passed. Pure: times are monotonic nanoseconds, passed in.

Only heartbeats (and registration) count as contact, as in Nomad; an agent starting counts
as one, so that one that never reaches the servers still stops its allocs in time.
"""

from __future__ import annotations

from collections.abc import Mapping

from drover.model.job import TaskGroup


def stop_after(tg: TaskGroup | None) -> int:
    """The group's stop_on_client_after (0: its allocs run on however long the agent is cut off)."""
    if tg is None or tg.disconnect is None:
        return 0
    return max(tg.disconnect.stop_on_client_after, 0)


class HeartbeatStop:
    """When the agent last reached the servers, and which allocs are due to stop for it."""

    def __init__(self, now: int) -> None:
        self.last_ok = now

    def ok(self, now: int) -> None:
        """A heartbeat (or registration) got through."""
        self.last_ok = max(self.last_ok, now)

    def due(self, timeouts: Mapping[str, int], now: int) -> list[str]:
        """The allocs to stop now, of `timeouts` (alloc ID to its group's stop_on_client_after)."""
        return sorted(a for a, t in timeouts.items() if t > 0 and now > self.last_ok + t)

    def next_due(self, timeouts: Mapping[str, int], now: int) -> int | None:
        """When the next of `timeouts` falls due if no heartbeat gets through meanwhile (None:
        none will)."""
        times = [self.last_ok + t for t in timeouts.values() if t > 0 and self.last_ok + t >= now]
        return min(times, default=None)
