"""Alloc health for deployments, judged on the client from task states (Nomad's allochealth
with health_check "task_states"; "checks" is judged the same, as Drover runs no service checks):
healthy once every task has run without a break for min_healthy_time; unhealthy as soon as a task
fails, or when healthy_deadline passes first. Pure: the runner hands in the states and the time.
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.model.alloc import TASK_STATE_DEAD, TASK_STATE_RUNNING, TaskState
from drover.model.durations import SECOND

FAILED_TASK = "Unhealthy because of failed task"


@dataclass
class Verdict:
    healthy: bool | None  # None: not decided yet
    reason: str = ""
    wake_at: int = 0  # when to look again if nothing changes (0: no need)


def _fmt(ns: int) -> str:
    return f"{ns / SECOND:g}s"


@dataclass
class HealthTracker:
    min_healthy_time: int
    deadline: int  # absolute, Unix ns
    healthy_deadline: int = 0  # the configured span, for the message
    running_since: int | None = None

    def update(self, states: dict[str, TaskState], now: int) -> Verdict:
        if any(s.state == TASK_STATE_DEAD and s.failed for s in states.values()):
            return Verdict(False, FAILED_TASK)
        if states and all(s.state == TASK_STATE_RUNNING for s in states.values()):
            if self.running_since is None:
                self.running_since = now
            healthy_at = self.running_since + self.min_healthy_time
            if now >= healthy_at:
                return Verdict(True)
        else:
            # A task that stopped or restarted starts the clock again.
            self.running_since = None
            healthy_at = 0
        if now >= self.deadline:
            return Verdict(
                False,
                f"Task not running for min_healthy_time of {_fmt(self.min_healthy_time)} "
                f"by healthy_deadline of {_fmt(self.healthy_deadline)}",
            )
        return Verdict(None, wake_at=min(healthy_at, self.deadline) if healthy_at else self.deadline)
