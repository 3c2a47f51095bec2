"""The agent's heartbeat stop (disconnect.stop_on_client_after), table by table: which allocs
are due to stop after how long without a heartbeat, and when to look again."""

from __future__ import annotations

import pytest

from drover.control.client.heartbeatstop import HeartbeatStop, stop_after
from drover.model import Task, TaskGroup
from drover.model.durations import SECOND as S
from drover.model.job import Disconnect

T0 = 1_000 * S


@pytest.mark.parametrize(
    ("tg", "expected"),
    [
        (None, 0),
        (TaskGroup(name="g", tasks=[Task(name="t")]), 0),
        (TaskGroup(name="g", disconnect=Disconnect(lost_after=60 * S)), 0),
        (TaskGroup(name="g", disconnect=Disconnect(stop_on_client_after=30 * S)), 30 * S),
    ],
)
def test_stop_after(tg: TaskGroup | None, expected: int) -> None:
    assert stop_after(tg) == expected


TIMEOUTS = {"short": 5 * S, "long": 30 * S, "never": 0}


@pytest.mark.parametrize(
    ("last_ok", "now", "due", "next_due"),
    [
        (T0, T0, [], T0 + 5 * S),
        (T0, T0 + 5 * S, [], T0 + 5 * S),  # at the limit: not yet (after it, as Nomad)
        (T0, T0 + 5 * S + 1, ["short"], T0 + 30 * S),
        (T0, T0 + 31 * S, ["long", "short"], None),
        (T0 + 20 * S, T0 + 31 * S, ["short"], T0 + 50 * S),  # a later heartbeat counts from then
    ],
)
def test_due_and_next_due(last_ok: int, now: int, due: list[str], next_due: int | None) -> None:
    hs = HeartbeatStop(T0)
    hs.ok(last_ok)
    assert hs.due(TIMEOUTS, now) == due
    assert hs.next_due(TIMEOUTS, now) == next_due


def test_starting_counts_as_contact_and_a_late_report_never_moves_it_back() -> None:
    hs = HeartbeatStop(T0)
    assert hs.due(TIMEOUTS, T0 + 6 * S) == ["short"]
    hs.ok(T0 + 10 * S)
    hs.ok(T0 + 2 * S)
    assert hs.last_ok == T0 + 10 * S
    assert hs.due(TIMEOUTS, T0 + 12 * S) == []
