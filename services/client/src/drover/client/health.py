"""Alloc health for deployments, judged on the client from task states and, with health_check
"checks" (the default), from the nomad services' checks too (Nomad's allochealth): healthy once
every task has run, and every check that tells health passed, without a break for
min_healthy_time; unhealthy as soon as a task fails or a task that should run ends, or when
healthy_deadline passes first. Tasks of a lifecycle
hook are judged as Nomad does: a poststop task is not looked at (it waits for the others), an
ephemeral prestart task may have completed, and a poststart one that completed is left out.
Pure: the runner hands in the states and the time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model.alloc import TASK_STATE_DEAD, TASK_STATE_PENDING, TaskState
from drover.model.durations import SECOND
from drover.model.job import TASK_HOOK_POSTSTART, TASK_HOOK_POSTSTOP, TASK_HOOK_PRESTART

FAILED_TASK = "Unhealthy because of failed task"
CHECKS_UNHEALTHY = "Services not healthy by deadline"


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
    # The hook of each task that is not a sidecar (drover.control.client.lifecycle.ephemeral_hooks).
    lifecycles: dict[str, str] = field(default_factory=dict)
    running_since: int | None = None

    def _judged(self, states: dict[str, TaskState]) -> dict[str, TaskState]:
        hooks = self.lifecycles
        return {
            name: s
            for name, s in states.items()
            if hooks.get(name) != TASK_HOOK_POSTSTOP
            and not (hooks.get(name) == TASK_HOOK_POSTSTART and s.state == TASK_STATE_DEAD and not s.failed)
        }

    def update(self, states: dict[str, TaskState], now: int, checks_passing: bool | None = None) -> Verdict:
        """`checks_passing`: whether every check that tells health passes (None: none to
        wait for)."""
        judged = self._judged(states)
        if any(
            s.state == TASK_STATE_DEAD and (s.failed or self.lifecycles.get(name) != TASK_HOOK_PRESTART)
            for name, s in judged.items()
        ):
            return Verdict(False, FAILED_TASK)
        if (
            judged
            and all(s.state != TASK_STATE_PENDING for s in judged.values())
            and checks_passing is not False
        ):
            if self.running_since is None:
                self.running_since = now
            healthy_at = self.running_since + self.min_healthy_time
            if now >= healthy_at:
                return Verdict(True)
        else:
            # A task that stopped or restarted starts the clock again.
            self.running_since = None
            healthy_at = 0
        if now >= self.deadline and checks_passing is False:
            return Verdict(False, CHECKS_UNHEALTHY)
        if now >= self.deadline:
            return Verdict(
                False,
                f"Task not running for min_healthy_time of {_fmt(self.min_healthy_time)} "
                f"by healthy_deadline of {_fmt(self.healthy_deadline)}",
            )
        return Verdict(None, wake_at=min(healthy_at, self.deadline) if healthy_at else self.deadline)
