"""Task lifecycle ordering within an alloc, as Nomad's alloc runner orders it.

- **When a task may start** (its task coordinator): the alloc moves through phases, each
  opening the gates of some lifecycle stages:

  1. init: nothing starts until every task is pending;
  2. prestart: prestart tasks start; it ends when every ephemeral prestart task has
     completed successfully and every prestart sidecar is running;
  3. main: the main tasks start (prestart sidecars keep running and may restart); it ends
     when no main task is pending any more;
  4. poststart: poststart tasks start; it ends when every ephemeral poststart task is dead;
  5. wait-alloc: sidecars and main tasks run on;
  6. poststop: once every task but the poststop ones is dead (from any phase), only the
     poststop tasks may start.

- **When the live tasks are killed** (its task state handler): a task failed for good
  ("Sibling Task Failed"), the leader task ended ("Leader Task Dead", which wins), or only
  sidecars are left running ("Main Tasks Dead"). Poststop tasks are never killed so; they run
  after the others.
- **In which order**: the leader first, then the other tasks together, then the sidecars.

Pure: the alloc runner hands in the task states and opens the gates this returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from drover.model.alloc import TASK_STATE_DEAD, TASK_STATE_PENDING, TASK_STATE_RUNNING, TaskState
from drover.model.job import TASK_HOOK_POSTSTART, TASK_HOOK_POSTSTOP, TASK_HOOK_PRESTART, Task

# Lifecycle stages: a task's hook, and for prestart and poststart whether it is a sidecar.
PRESTART = "prestart"
PRESTART_SIDECAR = "prestart-sidecar"
MAIN = "main"
POSTSTART = "poststart"
POSTSTART_SIDECAR = "poststart-sidecar"
POSTSTOP = "poststop"

# Nomad's task event types for the kills this decides.
SIBLING_FAILED = "Sibling Task Failed"
LEADER_DEAD = "Leader Task Dead"
MAIN_DEAD = "Main Tasks Dead"


def task_stage(task: Task) -> str:
    lc = task.lifecycle
    hook = lc.hook if lc is not None else ""
    if hook == TASK_HOOK_PRESTART:
        return PRESTART_SIDECAR if lc is not None and lc.sidecar else PRESTART
    if hook == TASK_HOOK_POSTSTART:
        return POSTSTART_SIDECAR if lc is not None and lc.sidecar else POSTSTART
    if hook == TASK_HOOK_POSTSTOP:
        return POSTSTOP
    return MAIN


def is_sidecar(task: Task) -> bool:
    return task.lifecycle is not None and task.lifecycle.sidecar


class Phase(Enum):
    INIT = "init"
    PRESTART = "prestart"
    MAIN = "main"
    POSTSTART = "poststart"
    WAIT_ALLOC = "wait-alloc"
    POSTSTOP = "poststop"


# The stages whose tasks may start in each phase.
OPEN: dict[Phase, frozenset[str]] = {
    Phase.INIT: frozenset(),
    Phase.PRESTART: frozenset({PRESTART, PRESTART_SIDECAR}),
    Phase.MAIN: frozenset({PRESTART_SIDECAR, MAIN}),
    Phase.POSTSTART: frozenset({PRESTART_SIDECAR, MAIN, POSTSTART, POSTSTART_SIDECAR}),
    Phase.WAIT_ALLOC: frozenset({PRESTART_SIDECAR, MAIN, POSTSTART_SIDECAR}),
    Phase.POSTSTOP: frozenset({POSTSTOP}),
}


def _successful(s: TaskState) -> bool:
    return s.state == TASK_STATE_DEAD and not s.failed


@dataclass
class Coordinator:
    """Which lifecycle stages may start now, from the tasks' states."""

    stages: dict[str, str]  # task name -> stage
    phase: Phase = Phase.INIT
    _by_stage: dict[str, list[str]] = field(default_factory=dict, init=False)

    @classmethod
    def of(cls, tasks: Sequence[Task]) -> Coordinator:
        return cls({t.name: task_stage(t) for t in tasks})

    def __post_init__(self) -> None:
        for name, stage in self.stages.items():
            self._by_stage.setdefault(stage, []).append(name)

    def open(self) -> frozenset[str]:
        return OPEN[self.phase]

    def may_start(self, task: str) -> bool:
        return self.stages.get(task, MAIN) in OPEN[self.phase]

    def update(self, states: Mapping[str, TaskState]) -> frozenset[str]:
        """Move on as far as `states` allow (an alloc without prestart tasks goes through
        that phase at once); the stages open then."""
        while (following := self._next(states)) != self.phase:
            self.phase = following
        return self.open()

    def restart(self) -> None:
        """Order the tasks again, as for an alloc restart of every task. Drover restarts tasks
        in place (they are not all pending at once), so this starts from prestart: what has
        to run before the main tasks runs again before them."""
        self.phase = Phase.PRESTART

    def restore(self, states: Mapping[str, TaskState]) -> frozenset[str]:
        """After the agent's restart: tasks that ran before are not pending, so init is
        skipped and the phase found from their states."""
        self.phase = Phase.PRESTART
        return self.update(states)

    def _tasks(self, *stages: str) -> list[str]:
        return [t for s in stages for t in self._by_stage.get(s, [])]

    def _next(self, states: Mapping[str, TaskState]) -> Phase:
        def state(task: str) -> TaskState:
            return states.get(task) or TaskState()

        if all(state(t).state == TASK_STATE_DEAD for t, s in self.stages.items() if s != POSTSTOP):
            return Phase.POSTSTOP
        match self.phase:
            case Phase.INIT if all(state(t).state == TASK_STATE_PENDING for t in self.stages):
                return Phase.PRESTART
            case Phase.PRESTART if all(_successful(state(t)) for t in self._tasks(PRESTART)) and all(
                state(t).state == TASK_STATE_RUNNING for t in self._tasks(PRESTART_SIDECAR)
            ):
                return Phase.MAIN
            case Phase.MAIN if all(state(t).state != TASK_STATE_PENDING for t in self._tasks(MAIN)):
                return Phase.POSTSTART
            case Phase.POSTSTART if all(state(t).state == TASK_STATE_DEAD for t in self._tasks(POSTSTART)):
                return Phase.WAIT_ALLOC
        return self.phase


@dataclass(frozen=True)
class Kill:
    """Kill the live tasks (every task not dead, poststop ones aside), each told `event`."""

    event: str
    failed_sibling: str = ""

    def message(self) -> str:
        if self.event == SIBLING_FAILED:
            return f'Task\'s sibling "{self.failed_sibling}" failed'
        return "Leader Task in Group dead" if self.event == LEADER_DEAD else "Main tasks in the group died"


def kill_decision(tasks: Sequence[Task], states: Mapping[str, TaskState]) -> Kill | None:
    """Whether the live tasks must be killed, and why."""
    live: list[Task] = []
    kill: Kill | None = None
    for t in tasks:
        if task_stage(t) == POSTSTOP:
            continue
        s = states.get(t.name) or TaskState()
        if s.state != TASK_STATE_DEAD:
            live.append(t)
        elif s.failed:
            kill = kill or Kill(SIBLING_FAILED, t.name)
        elif t.leader:
            kill = Kill(LEADER_DEAD)
    if not live:
        return None
    if kill is None and any(is_sidecar(t) for t in tasks) and all(is_sidecar(t) for t in live):
        kill = Kill(MAIN_DEAD)
    return kill


def kill_waves(tasks: Sequence[Task]) -> list[list[str]]:
    """The order tasks are killed in: the leader, then the other tasks together, then the
    sidecars together. Poststop tasks are not in it."""
    killed = [t for t in tasks if task_stage(t) != POSTSTOP]
    waves = [
        [t.name for t in killed if t.leader],
        [t.name for t in killed if not t.leader and not is_sidecar(t)],
        [t.name for t in killed if not t.leader and is_sidecar(t)],
    ]
    return [w for w in waves if w]


def ephemeral_hooks(tasks: Sequence[Task]) -> dict[str, str]:
    """The hook of each task that runs to completion beside the main tasks (prestart,
    poststart or poststop, not a sidecar): what deployment health judges differently."""
    return {
        t.name: t.lifecycle.hook
        for t in tasks
        if t.lifecycle is not None and t.lifecycle.hook and not t.lifecycle.sidecar
    }
