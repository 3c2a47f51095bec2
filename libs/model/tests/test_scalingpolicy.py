"""Scaling policies' IDs, targets and indexes as Nomad keeps them, and the list's filters."""

from __future__ import annotations

import itertools

import pytest

from drover.model.job import Job, ScalingPolicy, Task, TaskGroup
from drover.model.scalingpolicy import job_policies, matching, with_policy_ids, with_policy_indexes


def job(*groups: tuple[str, ScalingPolicy | None, list[ScalingPolicy]]) -> Job:
    return Job(
        id="web",
        namespace="default",
        task_groups=[
            TaskGroup(name=name, scaling=scaling, tasks=[Task(name="t", scaling_policies=task_policies)])
            for name, scaling, task_policies in groups
        ],
    )


def ids() -> object:
    counter = itertools.count(1)
    return lambda: f"id-{next(counter)}"


def test_new_policies_get_ids_and_targets() -> None:
    got = with_policy_ids(
        job(("g", ScalingPolicy(type="horizontal", max=5), [ScalingPolicy(type="vertical_cpu")])), None, ids()
    )
    (group, task) = job_policies(got)
    assert (group.id, group.namespace, group.target) == (
        "id-1", "default", {"Namespace": "default", "Job": "web", "Group": "g"},
    )  # fmt: skip
    assert (task.id, task.target) == (
        "id-2",
        {"Namespace": "default", "Job": "web", "Group": "g", "Task": "t"},
    )


@pytest.mark.parametrize(
    ("before", "after", "same_id"),
    [
        (("g", "horizontal"), ("g", "horizontal"), True),
        (("g", "horizontal"), ("h", "horizontal"), False),  # another group: another policy
        (("g", "horizontal"), ("g", "cluster"), False),  # another type
    ],
)
def test_a_policy_keeps_its_id_while_its_job_key_stays(
    before: tuple[str, str], after: tuple[str, str], same_id: bool
) -> None:
    old = with_policy_indexes(
        with_policy_ids(job((before[0], ScalingPolicy(type=before[1]), [])), None, ids()), index=7
    )
    new = with_policy_ids(job((after[0], ScalingPolicy(type=after[1], max=9), [])), old, lambda: "fresh")
    (p,) = job_policies(new)
    assert (p.id != "fresh") is same_id
    assert p.create_index == (7 if same_id else 0)
    (registered,) = job_policies(with_policy_indexes(new, index=9))
    assert (registered.create_index, registered.modify_index) == ((7 if same_id else 9), 9)


def test_a_job_without_policies_is_left_as_it_is() -> None:
    plain = job(("g", None, []))
    assert with_policy_ids(plain, None, ids()) is plain
    assert with_policy_indexes(plain, 3) is plain


def test_the_list_filters_by_job_and_type_prefix_ordered_by_id() -> None:
    policies = [
        ScalingPolicy(id="b", type="horizontal", target={"Job": "web"}),
        ScalingPolicy(id="a", type="vertical_mem", target={"Job": "web"}),
        ScalingPolicy(id="c", type="vertical_cpu", target={"Job": "api"}),
    ]
    assert [p.id for p in matching(policies)] == ["a", "b", "c"]
    assert [p.id for p in matching(policies, job_id="web")] == ["a", "b"]
    assert [p.id for p in matching(policies, type_prefix="vertical")] == ["a", "c"]
    assert [p.id for p in matching(policies, "api", "horizontal")] == []
