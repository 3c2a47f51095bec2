"""The operator's commands: the scheduler configuration's check-and-set, node pools written and
deleted (never the built-in ones, never while in use), and what a registration is admitted by."""

from __future__ import annotations

import pytest

from drover.control.commands.operator import (
    Admission,
    delete_node_pool,
    set_scheduler_config,
    upsert_node_pool,
)
from drover.control.errors import Conflict, Forbidden, Invalid, NotFound
from drover.model import Job, Resources, Task, TaskGroup
from drover.model.canonicalize import canonicalize
from drover.model.events import NodePoolDeleted, NodePoolUpserted, SchedulerConfigUpdated
from drover.model.nodepool import BUILTIN_NODE_POOLS, NodePool, NodePoolSchedulerConfiguration
from drover.model.schedulerconfig import DEFAULT_SCHEDULER_CONFIGURATION, SchedulerConfiguration

SET_AT_7 = SchedulerConfiguration(scheduler_algorithm="spread", create_index=3, modify_index=7)


@pytest.mark.parametrize(
    ("current", "cas", "updated"),
    [
        (None, None, True),
        (None, 0, True),  # never set: Nomad's default at index 0
        (None, 7, False),
        (SET_AT_7, 7, True),
        (SET_AT_7, 0, False),
        (SET_AT_7, 6, False),
        (SET_AT_7, None, True),
    ],
)
def test_check_and_set(current: SchedulerConfiguration | None, cas: int | None, updated: bool) -> None:
    change = set_scheduler_config(SchedulerConfiguration(scheduler_algorithm=""), current, 4, cas)
    assert change.updated is updated
    if not updated:
        assert change.events == []
        return
    (new,) = change.events
    assert new.expected_version == 4  # a concurrent set makes this one decided again
    assert isinstance(new.event, SchedulerConfigUpdated)
    # Canonicalized (an empty algorithm is binpack), its indexes the reducer's to set.
    assert new.event.config.scheduler_algorithm == "binpack" and new.event.config.modify_index == 0


def test_a_bad_configuration_lists_every_problem() -> None:
    bad = SchedulerConfiguration(scheduler_algorithm="roundrobin", node_limit_for_feasibility_checks=-1)
    with pytest.raises(Invalid) as e:
        set_scheduler_config(bad, None, 0)
    assert e.value.message.splitlines() == [
        "invalid scheduler algorithm: roundrobin (SchedulerAlgorithm must be binpack or spread)",
        "NodeLimitForFeasibilityChecks must not be negative",
    ]


@pytest.mark.parametrize(
    ("pool", "error", "needle"),
    [
        (NodePool(name="default"), Invalid, 'modifying node pool "default" is not allowed'),
        (NodePool(name="all", description="x"), Invalid, 'modifying node pool "all" is not allowed'),
        (NodePool(name=""), Invalid, 'invalid node pool "":\ninvalid name ""'),
        (NodePool(name="a/b", description="d" * 300), Invalid, "description longer than 256"),
        (
            NodePool(
                name="x", scheduler_configuration=NodePoolSchedulerConfiguration(scheduler_algorithm="rr")
            ),
            Invalid,
            "invalid scheduler algorithm: rr",
        ),
    ],
)
def test_a_pool_refused(pool: NodePool, error: type[Exception], needle: str) -> None:
    with pytest.raises(error) as e:
        upsert_node_pool(pool, 0)
    assert needle in str(e.value)


def test_a_pool_written() -> None:
    (new,) = upsert_node_pool(NodePool(name="gpu", create_index=9, modify_index=9), 2).events
    assert isinstance(new.event, NodePoolUpserted) and new.expected_version == 2
    assert new.event.pool.create_index == 0  # the reducer's to set


GPU = NodePool(name="gpu", create_index=5, modify_index=5)


@pytest.mark.parametrize(
    ("name", "existing", "nodes", "jobs", "error", "message"),
    [
        ("all", BUILTIN_NODE_POOLS["all"], False, False, Invalid, 'deleting node pool "all" is not allowed'),
        ("default", BUILTIN_NODE_POOLS["default"], True, True, Invalid, 'deleting node pool "default" is not allowed'),
        ("nope", None, False, False, NotFound, "node pool nope not found"),
        ("", None, False, False, Invalid, "node pool name is empty"),
        ("gpu", GPU, True, False, Conflict, 'node pool "gpu" has nodes in regions: [eu]'),
        ("gpu", GPU, False, True, Conflict, 'node pool "gpu" has non-terminal jobs in regions: [eu]'),
        (
            "gpu", GPU, True, True, Conflict,
            'node pool "gpu" has non-terminal jobs in regions: [eu]\nnode pool "gpu" has nodes in regions: [eu]',
        ),
    ],
)  # fmt: skip
def test_a_pool_not_deleted(
    name: str, existing: NodePool | None, nodes: bool, jobs: bool, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as e:
        delete_node_pool(name, existing, 1, has_nodes=nodes, has_live_jobs=jobs, region="eu")
    assert str(e.value) == message


def test_a_pool_deleted() -> None:
    (gone,) = delete_node_pool("gpu", GPU, 3, has_nodes=False, has_live_jobs=False, region="eu").events
    assert isinstance(gone.event, NodePoolDeleted) and gone.event.name == "gpu" and gone.expected_version == 3


def _job(memory_max: int = 0, pool: str = "default") -> Job:
    task = Task(
        name="t", driver="mock", resources=Resources(cpu=100, memory_mb=256, memory_max_mb=memory_max)
    )
    return canonicalize(Job(id="web", node_pool=pool, task_groups=[TaskGroup(name="g", tasks=[task])]))


REJECTING = SchedulerConfiguration(reject_job_registration=True)
OVERSUBSCRIBING = SchedulerConfiguration(memory_oversubscription_enabled=True)
DEFAULT_POOL = BUILTIN_NODE_POOLS["default"]
OVERSUBSCRIBING_POOL = NodePool(
    name="big", scheduler_configuration=NodePoolSchedulerConfiguration(memory_oversubscription_enabled=True)
)


@pytest.mark.parametrize(
    ("admission", "job", "refused", "warned"),
    [
        (Admission(DEFAULT_SCHEDULER_CONFIGURATION, DEFAULT_POOL), _job(), None, False),
        (Admission(REJECTING, DEFAULT_POOL), _job(), Forbidden, False),
        # A management token goes through (the ACL layer says which requests carry one).
        (Admission(REJECTING, DEFAULT_POOL, management=True), _job(), None, False),
        (Admission(DEFAULT_SCHEDULER_CONFIGURATION, None), _job(pool="nope"), Invalid, False),
        (Admission(DEFAULT_SCHEDULER_CONFIGURATION, DEFAULT_POOL), _job(memory_max=1024), None, True),
        (Admission(OVERSUBSCRIBING, DEFAULT_POOL), _job(memory_max=1024), None, False),
        (Admission(DEFAULT_SCHEDULER_CONFIGURATION, OVERSUBSCRIBING_POOL), _job(1024, "big"), None, False),
    ],
)
def test_admission(admission: Admission, job: Job, refused: type[Exception] | None, warned: bool) -> None:
    if refused is not None:
        with pytest.raises(refused):
            admission.admit(job)
        return
    warnings = admission.admit(job)
    assert bool(warnings) is warned
    if warned:
        assert warnings == [
            'Memory oversubscription is not enabled; Task "g.t" memory_max value will be ignored. '
            "Update the Scheduler Configuration to allow oversubscription."
        ]


def test_a_plan_is_checked_without_the_registration_switch() -> None:
    assert Admission(REJECTING, DEFAULT_POOL).check(_job()) == []
    with pytest.raises(Invalid, match="nonexistent node pool"):
        Admission(REJECTING, None).check(_job(pool="nope"))
