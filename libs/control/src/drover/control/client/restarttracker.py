"""The client's local restart decisions for a task (Nomad's restart tracker), as a pure state
machine: after each exit, restart after a delay, or give up.

- A batch task that exits 0 is done; a service or system task that exits is restarted (they
  are meant to run until stopped), counted like a failure. A task of a lifecycle hook that
  exits 0 is done, whatever its job, unless it is a sidecar (meant to run beside the main
  tasks); a poststop task is never restarted after exiting 0.
- Restarts are counted within `interval`; once `attempts` are used: mode "fail" fails the task
  ("Exceeded allowed attempts"), mode "delay" waits until the interval is over, then starts a
  fresh count.
- Each restart waits `delay` plus up to 25% random jitter.
- A task that cannot be started at all (bad config, disabled driver) is failed at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from drover.model.defaults import RESTART_MODE_DELAY
from drover.model.job import (
    JOB_TYPE_BATCH,
    JOB_TYPE_SYSBATCH,
    TASK_HOOK_POSTSTOP,
    RestartPolicy,
    TaskLifecycle,
)

RESTART = "restart"
FAIL = "fail"
DONE = "done"
JITTER = 0.25

REASON_EXCEEDED = "Exceeded allowed attempts, applying a delay"
REASON_FAILED = "Exceeded allowed attempts"
REASON_WITHIN_POLICY = "Restart within policy"
REASON_UNRECOVERABLE = "Error was unrecoverable"
REASON_COMPLETED = "Task completed successfully"


@dataclass
class Decision:
    action: str  # RESTART, FAIL or DONE
    delay: int = 0
    reason: str = ""


@dataclass
class RestartTracker:
    policy: RestartPolicy
    job_type: str
    lifecycle: TaskLifecycle | None = None
    count: int = 0
    interval_start: int = 0

    def restarts_on_success(self) -> bool:
        lc = self.lifecycle
        if lc is not None and lc.hook:
            return lc.sidecar and lc.hook != TASK_HOOK_POSTSTOP
        return self.job_type not in (JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH)

    def on_exit(self, now: int, exit_code: int, rng: random.Random) -> Decision:
        """The task exited with `exit_code` at `now`."""
        if exit_code == 0 and not self.restarts_on_success():
            return Decision(DONE, reason=REASON_COMPLETED)
        return self._restart_or_not(now, rng)

    def on_start_error(self, recoverable: bool, now: int, rng: random.Random) -> Decision:
        if not recoverable:
            return Decision(FAIL, reason=REASON_UNRECOVERABLE)
        return self._restart_or_not(now, rng)

    def _restart_or_not(self, now: int, rng: random.Random) -> Decision:
        p = self.policy
        if self.interval_start == 0 or (p.interval > 0 and now >= self.interval_start + p.interval):
            self.interval_start, self.count = now, 0
        if self.count >= p.attempts:
            if p.mode == RESTART_MODE_DELAY and p.interval > 0:
                # Wait out the interval, then start counting afresh.
                wait = self.interval_start + p.interval - now
                self.interval_start, self.count = self.interval_start + p.interval, 1
                return Decision(RESTART, max(0, wait), REASON_EXCEEDED)
            return Decision(FAIL, reason=REASON_FAILED)
        self.count += 1
        jitter = int(rng.random() * p.delay * JITTER) if p.delay > 0 else 0
        return Decision(RESTART, p.delay + jitter, REASON_WITHIN_POLICY)
