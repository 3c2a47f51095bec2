"""The node drainer's batches: migrate.max_parallel in flight per group, the deadline, system
jobs last or ignored, and completion."""

from __future__ import annotations

from drover.control.leader.drainer import drain_step
from drover.model import Allocation, Job, Node, Task, TaskGroup
from drover.model.alloc import DesiredTransition
from drover.model.durations import SECOND as S
from drover.model.job import MigrateStrategy
from drover.model.node import DrainSpec, DrainStrategy
from drover.scheduler.state import InMemoryState


def setup(
    n: int = 6, max_parallel: int = 2, system: int = 0, ignore_system: bool = False, deadline: int = 0
) -> InMemoryState:
    st = InMemoryState()
    st.upsert_node(
        Node(
            id="a",
            drain_strategy=DrainStrategy(
                drain_spec=DrainSpec(ignore_system_jobs=ignore_system), force_deadline=deadline
            ),
        )
    )
    st.upsert_node(Node(id="b"))
    st.upsert_job(
        Job(
            id="web",
            task_groups=[
                TaskGroup(
                    name="g",
                    count=n,
                    migrate=MigrateStrategy(max_parallel=max_parallel),
                    tasks=[Task(name="t", driver="mock")],
                )
            ],
        )
    )
    st.upsert_job(
        Job(
            id="agent",
            type="system",
            task_groups=[TaskGroup(name="s", tasks=[Task(name="t", driver="mock")])],
        )
    )
    for i in range(n):
        st.upsert_alloc(
            Allocation(
                id=f"w{i}",
                name=f"web.g[{i}]",
                job_id="web",
                task_group="g",
                node_id="a",
                client_status="running",
            )
        )
    for i in range(system):
        st.upsert_alloc(
            Allocation(
                id=f"s{i}",
                name=f"agent.s[{i}]",
                job_id="agent",
                task_group="s",
                node_id="a",
                client_status="running",
            )
        )
    return st


def node(st: InMemoryState) -> Node:
    n = st.node("a")
    assert n is not None
    return n


def flag(st: InMemoryState, *ids: str) -> None:
    for i in ids:
        a = st.alloc(i)
        assert a is not None
        st.upsert_alloc(a.model_copy(update={"desired_transition": DesiredTransition(migrate=True)}))


def test_max_parallel_per_group_with_one_node_drain_eval_per_job() -> None:
    st = setup()
    step = drain_step(st, node(st), 0)
    assert [a.id for a in step.migrate] == ["w0", "w1"]
    assert [(e.job_id, e.triggered_by, e.node_id) for e in step.evals] == [("web", "node-drain", "a")]
    flag(st, "w0", "w1")
    assert drain_step(st, node(st), 0).migrate == []  # two in flight


def test_a_replacement_not_yet_running_still_counts_as_in_flight() -> None:
    st = setup()
    flag(st, "w0", "w1")
    for i in ("w0", "w1"):  # the scheduler stopped them and placed replacements on b
        a = st.alloc(i)
        assert a is not None
        st.upsert_alloc(a.model_copy(update={"desired_status": "stop"}))
        st.upsert_alloc(
            Allocation(
                id=f"r-{i}", name=a.name, job_id="web", task_group="g", node_id="b", previous_allocation=i
            )
        )
    assert drain_step(st, node(st), 0).migrate == []
    r = st.alloc("r-w0")
    assert r is not None
    st.upsert_alloc(r.model_copy(update={"client_status": "running"}))
    assert [a.id for a in drain_step(st, node(st), 0).migrate] == ["w2"]


def test_deadline_marks_everything_left() -> None:
    st = setup(system=1, deadline=10 * S)
    flag(st, "w0")
    assert len(drain_step(st, node(st), 5 * S).migrate) == 1
    assert sorted(a.id for a in drain_step(st, node(st), 10 * S).migrate) == [
        "s0",
        "w1",
        "w2",
        "w3",
        "w4",
        "w5",
    ]


def test_system_allocs_go_last_or_not_at_all_and_then_the_drain_is_done() -> None:
    st = setup(n=1, system=1)
    assert [a.id for a in drain_step(st, node(st), 0).migrate] == ["w0"]
    w = st.alloc("w0")
    assert w is not None
    st.upsert_alloc(w.model_copy(update={"desired_status": "stop"}))
    assert [a.id for a in drain_step(st, node(st), 0).migrate] == ["s0"]
    ignoring = setup(n=0, system=1, ignore_system=True)
    assert drain_step(ignoring, node(ignoring), 0).done
    empty = setup(n=0)
    assert drain_step(empty, node(empty), 0).done
