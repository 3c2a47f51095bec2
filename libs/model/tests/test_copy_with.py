"""`copy_with`: a model copied with members put in, unvalidated, equals the validated model."""

from __future__ import annotations

from drover.model import Allocation, AllocMetric, Resources
from drover.model.alloc import NodeScoreMeta
from drover.model.base import copy_with


def test_a_copy_equals_the_model_the_constructor_builds() -> None:
    template = Allocation(eval_id="e", job_id="j", task_group="g", resources=Resources(cpu=100, memory_mb=64))
    meta = copy_with(NodeScoreMeta(), {"node_id": "n1", "scores": {"binpack": 0.5}, "norm_score": 0.5})
    own = {"id": "a1", "name": "j.g[0]", "node_id": "n1", "metrics": AllocMetric(score_meta_data=[meta])}
    built = copy_with(template, own)
    expected = Allocation(
        eval_id="e",
        job_id="j",
        task_group="g",
        resources=Resources(cpu=100, memory_mb=64),
        id="a1",
        name="j.g[0]",
        node_id="n1",
        metrics=AllocMetric(
            score_meta_data=[NodeScoreMeta(node_id="n1", scores={"binpack": 0.5}, norm_score=0.5)]
        ),
    )
    assert built == expected
    assert repr(built) == repr(expected)
    assert built.model_fields_set == expected.model_fields_set
    assert built.model_dump_json(by_alias=True, exclude_defaults=True) == expected.model_dump_json(
        by_alias=True, exclude_defaults=True
    )


def test_a_copy_leaves_its_template_as_it_was() -> None:
    template = Allocation(job_id="j")
    copy_with(template, {"id": "a1", "node_id": "n1"})
    assert template == Allocation(job_id="j")
    assert template.model_fields_set == {"job_id"}
