"""Candidate nodes and the feasibility checker (drivers, constraints, class cache, metrics)."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Constraint, DrainStrategy, DriverInfo, Job, Node, Task, TaskGroup, compute_class
from drover.model.node import NODE_INELIGIBLE, NODE_STATUS_DOWN, NODE_STATUS_INIT
from drover.scheduler.constraints import match_calls
from drover.scheduler.feasible import (
    FeasibilityChecker,
    distinct_constraints,
    node_in_job_pool,
    ready_nodes_in_pool,
    task_group_constraints,
    task_group_drivers,
)

LINUX = Constraint(ltarget="${attr.kernel.name}", operand="=", rtarget="linux")
BIG = Constraint(ltarget="${attr.cpu.numcores}", operand=">=", rtarget="8")
RACK_R1 = Constraint(ltarget="${meta.rack}", operand="=", rtarget="r1")
NOT_WORKER_3 = Constraint(ltarget="${node.unique.name}", operand="!=", rtarget="worker-3")
DISTINCT = Constraint(operand="distinct_hosts", rtarget="true")
DISTINCT_RACK = Constraint(operand="distinct_property", ltarget="${meta.rack}")


def node(
    i: int,
    *,
    dc: str = "dc1",
    pool: str = "default",
    node_class: str = "",
    attrs: dict[str, str] | None = None,
    meta: dict[str, str] | None = None,
    drivers: dict[str, DriverInfo] | None = None,
    with_class: bool = True,
    **kw: Any,
) -> Node:
    n = Node(
        id=f"node-{i}",
        name=f"worker-{i}",
        datacenter=dc,
        node_pool=pool,
        node_class=node_class,
        attributes={"kernel.name": "linux", "cpu.numcores": "8", f"unique.id-{i}": str(i), **(attrs or {})},
        meta={"rack": "r1", **(meta or {})},
        drivers={"docker": DriverInfo()} if drivers is None else drivers,
        **kw,
    )
    return n.model_copy(update={"computed_class": compute_class(n)}) if with_class else n


def group(name: str = "web", drivers: tuple[str, ...] = ("docker",), **kw: Any) -> TaskGroup:
    tasks = [Task(name=f"t{i}", driver=d) for i, d in enumerate(drivers)]
    return TaskGroup(name=name, tasks=tasks, **kw)


def job(*groups: TaskGroup, **kw: Any) -> Job:
    return Job(id="example", task_groups=list(groups) or [group()], **kw)


def ids(nodes: list[Node]) -> list[str]:
    return [n.id for n in nodes]


# --------------------------------------------------------------------------------------------
# ready_nodes_in_pool
# --------------------------------------------------------------------------------------------

DCS = ["dc1", "dc2", "dc10", "us-e-1", "us-w-1", "us-w-2", "eu-west-1", "dc[1]"]


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (["*"], DCS),
        (["dc*"], ["dc1", "dc2", "dc10", "dc[1]"]),
        (["dc?"], ["dc1", "dc2"]),
        (["us-?-1"], ["us-e-1", "us-w-1"]),
        (["us-*"], ["us-e-1", "us-w-1", "us-w-2"]),
        (["*-1"], ["us-e-1", "us-w-1", "eu-west-1"]),
        (["dc1", "eu-west-1"], ["dc1", "eu-west-1"]),
        (["dc[1]"], ["dc[1]"]),  # brackets are literal
        (["DC1"], []),  # case-sensitive
        (["dc"], []),  # whole-name match
        ([], []),
    ],
)
def test_datacenter_globs(patterns: list[str], expected: list[str]) -> None:
    nodes = [node(i, dc=dc) for i, dc in enumerate(DCS)]
    ready, available, in_pool = ready_nodes_in_pool(nodes, job(datacenters=patterns))
    assert [n.datacenter for n in ready] == expected
    assert available == {dc: 1 for dc in expected}
    assert in_pool == len(DCS)


@pytest.mark.parametrize(
    ("job_pool", "expected_pools", "expected_in_pool"),
    [
        ("default", ["default", "default"], 3),
        ("gpu", ["gpu"], 2),
        ("all", ["default", "gpu", "default", "batch"], 6),
        ("nope", [], 0),
    ],
)
def test_node_pools(job_pool: str, expected_pools: list[str], expected_in_pool: int) -> None:
    nodes = [
        node(0, pool="default"),
        node(1, pool="gpu"),
        node(2, pool="default"),
        node(3, pool="batch"),
        node(4, pool="default", status=NODE_STATUS_DOWN),  # counted in the pool, not ready
        node(5, pool="gpu", scheduling_eligibility=NODE_INELIGIBLE),
    ]
    ready, _, in_pool = ready_nodes_in_pool(nodes, job(node_pool=job_pool))
    assert [n.node_pool for n in ready] == expected_pools
    assert in_pool == expected_in_pool


@pytest.mark.parametrize(
    "kw",
    [
        {"status": NODE_STATUS_DOWN},
        {"status": NODE_STATUS_INIT},
        {"status": "disconnected"},
        {"drain_strategy": DrainStrategy()},
        {"scheduling_eligibility": NODE_INELIGIBLE},
    ],
)
def test_unusable_nodes_are_excluded(kw: dict[str, Any]) -> None:
    nodes = [node(0), node(1, **kw), node(2)]
    ready, available, in_pool = ready_nodes_in_pool(nodes, job())
    assert ids(ready) == ["node-0", "node-2"]
    assert available == {"dc1": 2}
    assert in_pool == 3


def test_ready_nodes_keep_order_and_count_per_datacenter() -> None:
    nodes = [node(i, dc=("dc1", "dc2", "dc3")[i % 3]) for i in range(9)]
    nodes[4] = node(4, dc="dc2", status=NODE_STATUS_DOWN)
    ready, available, in_pool = ready_nodes_in_pool(iter(nodes), job(datacenters=["dc1", "dc2"]))
    assert ids(ready) == ["node-0", "node-1", "node-3", "node-6", "node-7"]
    assert available == {"dc1": 3, "dc2": 2}
    assert in_pool == 9


@pytest.mark.parametrize(
    ("node_kw", "job_kw", "expected"),
    [
        ({}, {}, True),
        ({"dc": "dc2"}, {"datacenters": ["dc1"]}, False),
        ({"dc": "dc2"}, {"datacenters": ["dc?"]}, True),
        ({"pool": "gpu"}, {}, False),
        ({"pool": "gpu"}, {"node_pool": "gpu"}, True),
        ({"pool": "gpu"}, {"node_pool": "all"}, True),
        ({"status": NODE_STATUS_DOWN}, {}, True),  # status is not its business
        ({"drain_strategy": DrainStrategy()}, {}, True),
    ],
)
def test_node_in_job_pool(node_kw: dict[str, Any], job_kw: dict[str, Any], expected: bool) -> None:
    assert node_in_job_pool(node(0, **node_kw), job(**job_kw)) is expected


# --------------------------------------------------------------------------------------------
# What a group asks for
# --------------------------------------------------------------------------------------------


def test_task_group_drivers_and_constraints() -> None:
    t1 = Task(name="a", driver="docker", constraints=[BIG, DISTINCT])
    t2 = Task(name="b", driver="exec", constraints=[RACK_R1])
    t3 = Task(name="c", driver="docker")
    tg = TaskGroup(name="g", tasks=[t1, t2, t3], constraints=[LINUX, DISTINCT_RACK])
    j = Job(id="j", constraints=[DISTINCT, NOT_WORKER_3], task_groups=[tg])
    assert task_group_drivers(tg) == {"docker", "exec"}
    assert task_group_constraints(tg) == [LINUX, BIG, RACK_R1]
    assert distinct_constraints(j, tg) == [DISTINCT, DISTINCT_RACK]
    assert task_group_drivers(TaskGroup(tasks=[Task(name="x")])) == set()


# --------------------------------------------------------------------------------------------
# FeasibilityChecker: verdicts and metrics
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("drivers", "attrs", "feasible"),
    [
        ({"docker": DriverInfo(detected=True, healthy=True)}, {}, True),
        ({"docker": DriverInfo(detected=True, healthy=False)}, {}, False),
        ({"docker": DriverInfo(detected=False, healthy=False)}, {}, False),
        ({"exec": DriverInfo()}, {}, False),  # missing
        ({}, {}, False),
        # legacy nodes without driver info: the "driver.<name>" attribute, read as a Go bool
        ({}, {"driver.docker": "1"}, True),
        ({}, {"driver.docker": "true"}, True),
        ({}, {"driver.docker": "True"}, True),
        ({}, {"driver.docker": "0"}, False),
        ({}, {"driver.docker": "False"}, False),
        ({}, {"driver.docker": "yes"}, False),
        # driver info, when present, wins over the attribute
        ({"docker": DriverInfo(healthy=False)}, {"driver.docker": "1"}, False),
    ],
)
def test_drivers(drivers: dict[str, DriverInfo], attrs: dict[str, str], feasible: bool) -> None:
    n = node(0, drivers=drivers, attrs=attrs)
    result = FeasibilityChecker(job()).check(group(), [n])
    assert ids(result.nodes) == (["node-0"] if feasible else [])
    assert result.constraint_filtered == ({} if feasible else {"missing drivers": 1})


def test_every_task_driver_is_needed() -> None:
    tg = group(drivers=("docker", "exec"))
    both = node(0, drivers={"docker": DriverInfo(), "exec": DriverInfo()})
    one = node(1, drivers={"docker": DriverInfo()})
    result = FeasibilityChecker(job(tg)).check(tg, [both, one])
    assert ids(result.nodes) == ["node-0"]


def test_metrics_keys_and_counts() -> None:
    tg = TaskGroup(
        name="web", constraints=[BIG], tasks=[Task(name="t", driver="docker", constraints=[RACK_R1])]
    )
    j = job(tg, constraints=[LINUX, DISTINCT])
    nodes = [
        node(0, node_class="large"),  # feasible
        node(1, node_class="large", attrs={"kernel.name": "windows"}),  # job constraint
        node(2, node_class="small", attrs={"cpu.numcores": "4"}),  # group constraint
        node(3, attrs={"cpu.numcores": "16"}, meta={"rack": "r2"}),  # task constraint, no class
        node(4, node_class="small", drivers={}),  # driver
        node(5, node_class="large", attrs={"kernel.name": "windows"}),
        node(6, node_class="large", attrs={"cpu.numcores": "16"}),  # feasible
    ]
    result = FeasibilityChecker(j).check(tg, nodes)
    assert ids(result.nodes) == ["node-0", "node-6"]
    assert result.nodes_evaluated == 7
    assert result.nodes_filtered == 5
    assert result.constraint_filtered == {
        "${attr.kernel.name} = linux": 2,
        "${attr.cpu.numcores} >= 8": 1,
        "${meta.rack} = r1": 1,
        "missing drivers": 1,
    }
    # Nomad counts classes only for nodes that have one.
    assert result.class_filtered == {"large": 2, "small": 2}
    assert result.escaped is False
    metric = result.metrics
    assert (metric.nodes_evaluated, metric.nodes_filtered) == (7, 5)
    assert metric.constraint_filtered == result.constraint_filtered
    assert metric.class_filtered == result.class_filtered


def test_check_order_job_constraints_then_drivers_then_group_constraints() -> None:
    tg = group(constraints=[BIG])
    j = job(tg, constraints=[LINUX])
    fails_all = node(0, attrs={"kernel.name": "darwin", "cpu.numcores": "2"}, drivers={})
    fails_driver_and_group = node(1, attrs={"cpu.numcores": "2"}, drivers={})
    result = FeasibilityChecker(j).check(tg, [fails_all, fails_driver_and_group])
    assert result.constraint_filtered == {"${attr.kernel.name} = linux": 1, "missing drivers": 1}


def test_first_failing_constraint_is_reported() -> None:
    tg = group(constraints=[BIG, RACK_R1])
    n = node(0, attrs={"cpu.numcores": "2"}, meta={"rack": "r9"})
    result = FeasibilityChecker(job(tg)).check(tg, [n])
    assert result.constraint_filtered == {"${attr.cpu.numcores} >= 8": 1}


def test_distinct_constraints_are_left_to_placement() -> None:
    tg = group(constraints=[DISTINCT_RACK])
    j = job(tg, constraints=[DISTINCT])
    result = FeasibilityChecker(j).check(tg, [node(0), node(1)])
    assert ids(result.nodes) == ["node-0", "node-1"]


def test_empty_input() -> None:
    result = FeasibilityChecker(job()).check(group(), [])
    assert (result.nodes, result.nodes_evaluated, result.nodes_filtered) == ([], 0, 0)


# --------------------------------------------------------------------------------------------
# The computed-class cache
# --------------------------------------------------------------------------------------------


def classy_nodes(n: int, classes: int) -> list[Node]:
    """``n`` nodes in ``classes`` computed classes; odd classes run Windows."""
    templates = [
        node(c, node_class=f"class-{c}", attrs={"kernel.name": "windows" if c % 2 else "linux"})
        for c in range(classes)
    ]
    out = []
    for i in range(n):
        t = templates[i % classes]
        # Same computed class (unique.* attributes are not part of it), own identity.
        out.append(
            t.model_copy(update={"id": f"node-{i}", "name": f"worker-{i}", "attributes": {**t.attributes}})
        )
    return out


def test_class_cache_skips_rechecking() -> None:
    tg = group(constraints=[BIG, RACK_R1])
    j = job(tg, constraints=[LINUX])
    nodes = classy_nodes(1000, 4)
    checker = FeasibilityChecker(j)
    before = match_calls()
    result = checker.check(tg, nodes)
    # job level: 1 constraint x 4 classes; group level: 2 constraints x the 2 linux classes.
    assert match_calls() - before == 4 + 2 * 2
    assert checker.node_checks == 4 + 2
    assert len(result.nodes) == 500
    assert result.constraint_filtered == {"${attr.kernel.name} = linux": 500}
    assert result.class_filtered == {"class-1": 250, "class-3": 250}
    assert result.class_eligibility == {
        nodes[0].computed_class: True,
        nodes[1].computed_class: False,
        nodes[2].computed_class: True,
        nodes[3].computed_class: False,
    }

    # A second pass costs nothing.
    before = match_calls()
    again = checker.check(tg, nodes)
    assert match_calls() == before
    assert ids(again.nodes) == ids(result.nodes)
    assert again.constraint_filtered == result.constraint_filtered


def test_cached_metrics_equal_uncached_metrics() -> None:
    tg = group(constraints=[BIG])
    j = job(tg, constraints=[LINUX])
    nodes = classy_nodes(40, 4)
    nodes[5] = node(5, node_class="class-1", attrs={"cpu.numcores": "2"})
    cached = FeasibilityChecker(j).check(tg, nodes)
    one_by_one = [FeasibilityChecker(j).check(tg, [n]) for n in nodes]
    assert ids(cached.nodes) == [n.id for r in one_by_one for n in r.nodes]
    assert cached.nodes_filtered == sum(r.nodes_filtered for r in one_by_one)
    merged: dict[str, int] = {}
    for r in one_by_one:
        for k, v in r.constraint_filtered.items():
            merged[k] = merged.get(k, 0) + v
    assert cached.constraint_filtered == merged


def test_groups_share_the_job_level_cache() -> None:
    web = group("web", constraints=[BIG])
    api = group("api", constraints=[RACK_R1])
    j = job(web, api, constraints=[LINUX])
    nodes = classy_nodes(100, 4)
    checker = FeasibilityChecker(j)
    before = match_calls()
    checker.check(web, nodes)
    assert match_calls() - before == 4 + 2  # job: 4 classes; web: 2 linux classes
    before = match_calls()
    checker.check(api, nodes)
    assert match_calls() - before == 2  # api group only: the job level is cached
    before = match_calls()
    checker.check(web, nodes)
    assert match_calls() == before


def test_nodes_without_computed_class_are_classed_once() -> None:
    tg = group(constraints=[BIG])
    nodes = [node(i, with_class=False) for i in range(50)]
    assert all(n.computed_class == "" for n in nodes)
    checker = FeasibilityChecker(job(tg, constraints=[LINUX]))
    before = match_calls()
    result = checker.check(tg, nodes)
    assert match_calls() - before == 2  # unique.* attributes differ, the class does not
    assert len(result.nodes) == 50
    assert list(result.class_eligibility) == [compute_class(nodes[0])]
    assert all(n.computed_class == "" for n in nodes)  # inputs untouched


def test_escaped_group_constraints_are_checked_per_node() -> None:
    tg = group(constraints=[NOT_WORKER_3])
    j = job(tg, constraints=[LINUX])
    nodes = classy_nodes(10, 1)  # one class, worker-0 .. worker-9
    checker = FeasibilityChecker(j)
    before = match_calls()
    result = checker.check(tg, nodes)
    assert match_calls() - before == 1 + 10  # job level cached, group level per node
    assert ids(result.nodes) == [f"node-{i}" for i in range(10) if i != 3]
    assert result.constraint_filtered == {"${node.unique.name} != worker-3": 1}
    assert result.escaped is True
    # Only the job level (not escaped) says anything about the class.
    assert result.class_eligibility == {nodes[0].computed_class: True}
    assert checker.escaped() is True


def test_escaped_job_constraints_are_checked_per_node_group_still_cached() -> None:
    tg = group(constraints=[LINUX])
    j = job(tg, constraints=[Constraint(ltarget="${attr.unique.id-4}", operand="is_not_set")])
    nodes = [
        n.model_copy(update={"attributes": {**n.attributes, f"unique.id-{i}": str(i)}})
        for i, n in enumerate(classy_nodes(10, 2))
    ]
    checker = FeasibilityChecker(j)
    before = match_calls()
    result = checker.check(tg, nodes)
    # job level: every node; group level: once per class among the nodes that got that far
    assert match_calls() - before == 10 + 2
    assert ids(result.nodes) == ["node-0", "node-2", "node-6", "node-8"]
    assert result.constraint_filtered == {
        "${attr.unique.id-4} is_not_set": 1,
        "${attr.kernel.name} = linux": 5,
    }
    assert result.escaped is True
    assert result.class_eligibility == {nodes[0].computed_class: True, nodes[1].computed_class: False}


def test_class_eligibility_across_groups() -> None:
    web = group("web", constraints=[BIG])
    api = group("api", constraints=[Constraint(ltarget="${attr.cpu.numcores}", operand="<", rtarget="8")])
    j = job(web, api, constraints=[LINUX])
    big = node(0, node_class="big")
    small = node(1, node_class="small", attrs={"cpu.numcores": "2"})
    windows = node(2, node_class="win", attrs={"kernel.name": "windows"})
    checker = FeasibilityChecker(j)
    r_web = checker.check(web, [big, small, windows])
    assert r_web.class_eligibility == {
        big.computed_class: True,
        small.computed_class: False,
        windows.computed_class: False,
    }
    r_api = checker.check(api, [big, small, windows])
    assert r_api.class_eligibility == {
        big.computed_class: False,
        small.computed_class: True,
        windows.computed_class: False,
    }
    # Over the whole job: a class one group can use is eligible; the job's veto stands.
    assert checker.class_eligibility() == {
        big.computed_class: True,
        small.computed_class: True,
        windows.computed_class: False,
    }
    assert checker.escaped() is False


def test_ten_thousand_nodes_in_twenty_classes_cost_twenty_checks() -> None:
    tg = group(constraints=[BIG, RACK_R1])
    j = job(tg, constraints=[LINUX])
    nodes = classy_nodes(10_000, 20)
    checker = FeasibilityChecker(j)
    before = match_calls()
    result = checker.check(tg, nodes)
    assert match_calls() - before == 20 + 10 * 2
    assert checker.node_checks == 20 + 10
    assert result.nodes_evaluated == 10_000
    assert len(result.nodes) == 5_000
    assert len(result.class_eligibility) == 20


def test_ready_nodes_are_remembered_until_a_node_changes() -> None:
    from drover.scheduler.feasible import ready_nodes_table
    from drover.scheduler.state import InMemoryState

    state = InMemoryState()
    for i in range(3):
        state.upsert_node(Node(id=f"n{i}", datacenter="dc1"))
    job = Job(id="j", datacenters=["dc1"])
    ready = ready_nodes_table(state, job)
    assert [n.id for n in ready.nodes] == ["n0", "n1", "n2"] and ready.available == {"dc1": 3}
    assert ready.in_pool == 3 and ready.caps.shape == (3, 3)
    assert ready.row == {"n0": 0, "n1": 1, "n2": 2}
    assert state.derived  # remembered
    assert ready_nodes_table(state, job) is ready
    state.upsert_node(Node(id="n1", datacenter="dc1", status=NODE_STATUS_DOWN))
    ready = ready_nodes_table(state, job)
    assert [n.id for n in ready.nodes] == ["n0", "n2"] and ready.available == {"dc1": 2}
    assert ready.caps.shape == (2, 3) and ready.row == {"n0": 0, "n2": 1}
    state.delete_node("n0")
    assert [n.id for n in ready_nodes_table(state, job).nodes] == ["n2"]
    # another datacenter list is another entry
    assert ready_nodes_table(state, Job(id="k", datacenters=["dc2"])).nodes == []


def test_a_node_table_reads_the_usage_the_state_keeps_node_by_node() -> None:
    """The table of cached ready nodes gathers usage from the state's flat array at once; it
    must hold what the state says node by node, after placements, stops and new nodes, and
    for nodes that never held an alloc."""
    from drover.model import Allocation, Resources
    from drover.scheduler.feasible import ready_nodes_table
    from drover.scheduler.nodetable import NodeTable
    from drover.scheduler.state import InMemoryState

    state = InMemoryState()
    job = Job(id="j", datacenters=["dc1"])

    def alloc(i: int, node: str, **kw: object) -> Allocation:
        return Allocation(
            id=f"a{i}",
            node_id=node,
            job_id="j",
            resources=Resources(cpu=100 * i, memory_mb=i, disk_mb=2 * i),
            **kw,
        )  # type: ignore[arg-type]

    state.upsert_alloc(alloc(1, "n9"))  # usage on a node not registered yet
    for i in range(4):
        state.upsert_node(Node(id=f"n{i}", datacenter="dc1"))
    for i, node in enumerate(["n0", "n2", "n2", "n3"], start=2):
        state.upsert_alloc(alloc(i, node))
    state.upsert_alloc(alloc(5, "n3", desired_status="stop"))  # frees what a5 held on n3

    def tables() -> tuple[NodeTable, NodeTable]:
        ready = ready_nodes_table(state, job)
        assert ready.usage_slots is not None
        return NodeTable(ready, state), NodeTable(list(ready.nodes), state)

    for _ in range(2):
        fast, slow = tables()
        assert [n.id for n in fast.nodes] == ["n0", "n1", "n2", "n3"]
        for got in (fast, slow):
            assert list(got.used_cpu) == [200, 0, 700, 0]
            assert list(got.used_mem) == [2, 0, 7, 0] and list(got.used_disk) == [4, 0, 14, 0]
        assert [state.node_usage(n) for n in ("n0", "n1", "n2", "n3", "n9", "nx")] == [
            (200, 2, 4),
            (0, 0, 0),
            (700, 7, 14),
            (0, 0, 0),
            (100, 1, 2),
            (0, 0, 0),
        ]
        state.upsert_node(Node(id="n9", datacenter="dc1"))  # a new node: a new cached table
        state.upsert_alloc(alloc(6, "n1"))
        state.upsert_alloc(alloc(6, "n0"))  # moved: n1 back to nothing
        fast, slow = tables()
        assert list(fast.used_cpu) == list(slow.used_cpu) == [800, 0, 700, 0, 100]
        state.delete_node("n9")
        state.upsert_alloc(alloc(6, "n0", desired_status="stop"))


def _kinds_of_nodes() -> list[Node]:
    """Nodes of eight computed classes, interleaved: two kernels, two node classes, some
    without the job's driver."""
    nodes = []
    for i in range(60):
        node = Node(
            id=f"n{i:02d}",
            datacenter="dc1",
            node_class=("gpu", "")[i % 2],
            attributes={"kernel.name": ("linux", "windows", "linux")[i % 3], "unique.hostname": f"h{i}"},
            drivers={"mock": DriverInfo()} if i % 5 else {"raw_exec": DriverInfo()},
        )
        nodes.append(node.model_copy(update={"computed_class": compute_class(node)}))
    return nodes


ROWS_CASES: dict[str, tuple[list[Constraint], list[Constraint]]] = {
    "no constraints": ([], []),
    "job constraint": ([Constraint(ltarget="${attr.kernel.name}", rtarget="linux", operand="=")], []),
    "group constraint on the class": ([], [Constraint(ltarget="${node.class}", rtarget="gpu", operand="=")]),
    "both": (
        [Constraint(ltarget="${attr.kernel.name}", rtarget="windows", operand="!=")],
        [Constraint(ltarget="${node.class}", rtarget="gpu", operand="!=")],
    ),
    "escaped": ([Constraint(ltarget="${attr.unique.hostname}", rtarget="h1[0-9]", operand="regexp")], []),
}


@pytest.mark.parametrize("job_cs,tg_cs", ROWS_CASES.values(), ids=ROWS_CASES.keys())
def test_checking_class_by_class_gives_what_checking_node_by_node_does(
    job_cs: list[Constraint], tg_cs: list[Constraint]
) -> None:
    from drover.scheduler.feasible import ready_nodes_table
    from drover.scheduler.state import InMemoryState

    state = InMemoryState()
    for node in _kinds_of_nodes():
        state.upsert_node(node)
    tg = TaskGroup(name="g", constraints=tg_cs, tasks=[Task(name="t", driver="mock")])
    job = Job(id="j", datacenters=["dc1"], constraints=job_cs, task_groups=[tg])
    ready = ready_nodes_table(state, job)
    assert len(ready.class_rows) == 8 and sum(map(len, ready.class_rows.values())) == 60
    by_node = FeasibilityChecker(job).check(tg, ready.nodes)
    by_class = FeasibilityChecker(job).check_rows(tg, ready.nodes, ready.class_rows)
    assert by_class.mask is not None
    assert [n.id for n, ok in zip(ready.nodes, by_class.mask, strict=True) if ok] == [
        n.id for n in by_node.nodes
    ]
    by_class.mask = None
    assert by_class == by_node
    assert 0 < len(by_node.nodes) < 60 or not (job_cs or tg_cs)
