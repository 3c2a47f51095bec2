"""Task lifecycle ordering within an alloc, as Nomad's task coordinator and alloc runner decide
it (drover.control.client.lifecycle)."""

from __future__ import annotations

import pytest

from drover.control.client.lifecycle import (
    LEADER_DEAD,
    MAIN,
    MAIN_DEAD,
    POSTSTART,
    POSTSTART_SIDECAR,
    POSTSTOP,
    PRESTART,
    PRESTART_SIDECAR,
    SIBLING_FAILED,
    Coordinator,
    Kill,
    Phase,
    ephemeral_hooks,
    kill_decision,
    kill_waves,
)
from drover.model.alloc import TaskState
from drover.model.job import Task, TaskLifecycle


def task(name: str, hook: str = "", sidecar: bool = False, leader: bool = False) -> Task:
    return Task(
        name=name, lifecycle=TaskLifecycle(hook=hook, sidecar=sidecar) if hook else None, leader=leader
    )


P, R = TaskState(state="pending"), TaskState(state="running")
OK, FAILED = TaskState(state="dead"), TaskState(state="dead", failed=True)

# An alloc with one task of every stage.
TASKS = [
    task("init", "prestart"),
    task("proxy", "prestart", sidecar=True),
    task("app"),
    task("warm", "poststart"),
    task("log", "poststart", sidecar=True),
    task("clean", "poststop"),
]


def states(**kw: TaskState) -> dict[str, TaskState]:
    return {t.name: kw.get(t.name, P) for t in TASKS}


@pytest.mark.parametrize(
    ("name", "steps", "phase", "open_"),
    [
        ("all pending: prestart may start", [states()], Phase.PRESTART, {PRESTART, PRESTART_SIDECAR}),
        (
            "the ephemeral prestart task still runs",
            [states(), states(init=R, proxy=R)],
            Phase.PRESTART,
            {PRESTART, PRESTART_SIDECAR},
        ),
        (
            "the prestart task succeeded, the sidecar runs: main may start",
            [states(), states(init=OK, proxy=R)],
            Phase.MAIN,
            {PRESTART_SIDECAR, MAIN},
        ),
        (
            "a failed prestart task holds main back",
            [states(), states(init=FAILED, proxy=R)],
            Phase.PRESTART,
            {PRESTART, PRESTART_SIDECAR},
        ),
        (
            "the sidecar is not running yet",
            [states(), states(init=OK, proxy=P)],
            Phase.PRESTART,
            {PRESTART, PRESTART_SIDECAR},
        ),
        (
            "main is running: poststart may start",
            [states(), states(init=OK, proxy=R), states(init=OK, proxy=R, app=R)],
            Phase.POSTSTART,
            {PRESTART_SIDECAR, MAIN, POSTSTART, POSTSTART_SIDECAR},
        ),
        (
            "the ephemeral poststart task is done: sidecars and main run on",
            [states(), states(init=OK, proxy=R), states(init=OK, proxy=R, app=R, warm=OK, log=R)],
            Phase.WAIT_ALLOC,
            {PRESTART_SIDECAR, MAIN, POSTSTART_SIDECAR},
        ),
        (
            "everything but poststop is dead: poststop may start",
            [states(), states(init=OK, proxy=OK, app=OK, warm=OK, log=FAILED)],
            Phase.POSTSTOP,
            {POSTSTOP},
        ),
        (
            "init waits for every task to be pending",
            [states(app=R)],
            Phase.INIT,
            set(),
        ),
    ],
)
def test_the_coordinator_opens_stages_in_nomads_order(
    name: str, steps: list[dict[str, TaskState]], phase: Phase, open_: set[str]
) -> None:
    c = Coordinator.of(TASKS)
    for s in steps:
        opened = c.update(s)
    assert (c.phase, set(opened)) == (phase, open_), name


@pytest.mark.parametrize(
    ("tasks", "states_", "phase"),
    [
        # no prestart task: straight to main, and with main running to poststart
        ([task("app")], {"app": P}, Phase.MAIN),
        ([task("app"), task("w", "poststart")], {"app": R, "w": P}, Phase.POSTSTART),
        # a lone main task running with no poststart: wait for the alloc
        ([task("app")], {"app": R}, Phase.WAIT_ALLOC),
        ([task("app"), task("c", "poststop")], {"app": OK, "c": P}, Phase.POSTSTOP),
    ],
)
def test_phases_without_tasks_are_passed_through(
    tasks: list[Task], states_: dict[str, TaskState], phase: Phase
) -> None:
    c = Coordinator.of(tasks)
    c.update({t.name: P for t in tasks})
    c.update(states_)
    assert c.phase is phase


def test_restore_and_restart_start_from_prestart() -> None:
    c = Coordinator.of(TASKS)
    # after the agent's restart: main runs on, the prestart task had completed
    c.restore(states(init=OK, proxy=R, app=R, warm=OK, log=R))
    assert c.phase is Phase.WAIT_ALLOC and c.may_start("app") and not c.may_start("init")
    c.restart()  # every task runs again: prestart first
    assert c.may_start("init") and not c.may_start("app")
    c.update(states(init=R, proxy=R, app=R, warm=OK, log=R))
    assert c.phase is Phase.PRESTART


@pytest.mark.parametrize(
    ("tasks", "states_", "kill"),
    [
        # a main task failed for good: its siblings are killed
        ([task("a"), task("b")], {"a": FAILED, "b": R}, Kill(SIBLING_FAILED, "a")),
        # a failed prestart task kills the main tasks still waiting for it
        ([task("i", "prestart"), task("a")], {"i": FAILED, "a": P}, Kill(SIBLING_FAILED, "i")),
        # the leader ended (even successfully): the others are killed; it wins over a failure
        ([task("l", leader=True), task("b")], {"l": OK, "b": R}, Kill(LEADER_DEAD)),
        ([task("f"), task("l", leader=True), task("b")], {"f": FAILED, "l": OK, "b": R}, Kill(LEADER_DEAD)),
        # only sidecars are left: they are killed
        ([task("p", "prestart", sidecar=True), task("a")], {"p": R, "a": OK}, Kill(MAIN_DEAD)),
        # a successful ephemeral task ends alone
        ([task("i", "prestart"), task("a")], {"i": OK, "a": P}, None),
        ([task("a"), task("b")], {"a": OK, "b": R}, None),
        # nothing left to kill
        ([task("a"), task("b")], {"a": FAILED, "b": OK}, None),
        # poststop tasks are neither killed nor a reason to kill
        ([task("a"), task("c", "poststop")], {"a": FAILED, "c": P}, None),
        ([task("a"), task("c", "poststop")], {"a": R, "c": FAILED}, None),
    ],
)
def test_kill_decisions(tasks: list[Task], states_: dict[str, TaskState], kill: Kill | None) -> None:
    assert kill_decision(tasks, states_) == kill


def test_kill_messages_are_nomads() -> None:
    assert Kill(SIBLING_FAILED, "db").message() == 'Task\'s sibling "db" failed'
    assert Kill(LEADER_DEAD).message() == "Leader Task in Group dead"
    assert Kill(MAIN_DEAD).message() == "Main tasks in the group died"


def test_kill_order_leader_then_the_rest_then_sidecars() -> None:
    tasks = [
        task("proxy", "prestart", sidecar=True),
        task("app"),
        task("boss", leader=True),
        task("log", "poststart", sidecar=True),
        task("warm", "poststart"),
        task("clean", "poststop"),
    ]
    assert kill_waves(tasks) == [["boss"], ["app", "warm"], ["proxy", "log"]]
    assert kill_waves([task("a")]) == [["a"]]


def test_ephemeral_hooks() -> None:
    assert ephemeral_hooks(TASKS) == {"init": PRESTART, "warm": POSTSTART, "clean": POSTSTOP}
    assert MAIN not in ephemeral_hooks(TASKS).values()
    assert POSTSTART_SIDECAR not in ephemeral_hooks(TASKS).values()
