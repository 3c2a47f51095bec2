"""Parameterized jobs in the model: the block as Nomad's JSON carries it, its defaults, its
rules, where a dispatched payload is written, a parent's status, and job summaries."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.job import derive_job_status
from drover.model.summary import job_summary
from drover.model.validation import validate_job
from drover.model.validation.dispatch import decode_payload, dispatch_payload_path

TASK = "Task group 'g', task 't'"


def job_doc(job_type: str = "batch", **job: Any) -> dict[str, Any]:
    return {
        "ID": "p",
        "Type": job_type,
        "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}],
        **job,
    }


def prepared(doc: dict[str, Any]) -> Job:
    return canonicalize(Job.model_validate(doc))


def test_the_block_and_dispatch_payload_read_and_write_nomads_json() -> None:
    doc = job_doc(ParameterizedJob={"Payload": "required", "MetaRequired": ["a"], "MetaOptional": ["b"]})
    doc["TaskGroups"][0]["Tasks"][0]["DispatchPayload"] = {"File": "in/payload.json"}
    job = prepared(doc)
    assert validate_job(job) == []
    out = job.to_api()
    assert out["ParameterizedJob"] == {"Payload": "required", "MetaRequired": ["a"], "MetaOptional": ["b"]}
    assert out["TaskGroups"][0]["Tasks"][0]["DispatchPayload"] == {"File": "in/payload.json"}
    assert out["Dispatched"] is False and out["Payload"] is None and out["DispatchIdempotencyToken"] == ""
    assert job.is_parameterized() and job.launches_children()


def test_the_payload_rule_defaults_to_optional_and_null_blocks_are_absent() -> None:
    assert prepared(job_doc(ParameterizedJob={})).parameterized_job.payload == "optional"  # type: ignore[union-attr]
    plain = prepared(job_doc(ParameterizedJob=None))
    assert plain.parameterized_job is None and not plain.is_parameterized() and not plain.launches_children()


def test_a_dispatched_child_is_not_itself_parameterized() -> None:
    child = prepared(job_doc(ParameterizedJob={}, Dispatched=True, ParentID="p"))
    assert not child.is_parameterized() and not child.launches_children()


@pytest.mark.parametrize(
    ("job", "task", "words"),
    [
        (
            {"Type": "service", "ParameterizedJob": {}},
            {},
            "Job: parameterized is only allowed for batch and sysbatch",
        ),
        (
            {"Type": "system", "ParameterizedJob": {}},
            {},
            "Job: parameterized is only allowed for batch and sysbatch",
        ),
        ({"ParameterizedJob": {"Payload": "maybe"}}, {}, "Job: parameterized payload 'maybe' is unknown"),
        (
            {"ParameterizedJob": {"MetaRequired": ["a", "b"], "MetaOptional": ["b"]}},
            {},
            "Job: parameterized meta keys 'b' are both required and optional",
        ),
        ({"ParameterizedJob": {"MetaOptional": [""]}}, {}, "Job: a parameterized meta key is empty"),
        ({"Payload": "not base64!"}, {}, "Job: payload is not valid base64"),
        ({}, {"DispatchPayload": {"File": ""}}, f"{TASK}: dispatch_payload names no file"),
        (
            {},
            {"DispatchPayload": {"File": "../../../etc/passwd"}},
            f"{TASK}: dispatch_payload file '../../../etc/passwd' leads out of the allocation directory",
        ),
    ],
)
def test_rules(job: dict[str, Any], task: dict[str, Any], words: str) -> None:
    doc = job_doc(**{"Type": "batch", **job})
    doc["TaskGroups"][0]["Tasks"][0].update(task)
    if doc["Type"] == "system":
        doc["TaskGroups"][0]["Count"] = 1
    problems = validate_job(prepared(doc))
    assert [p for p in problems if p.startswith(words)], problems


@pytest.mark.parametrize("job_type", ["batch", "sysbatch"])
def test_batch_and_sysbatch_may_be_parameterized(job_type: str) -> None:
    assert validate_job(prepared(job_doc(job_type, ParameterizedJob={"Payload": "forbidden"}))) == []


@pytest.mark.parametrize(
    ("file", "path"),
    [
        ("input.txt", "t/local/input.txt"),
        ("sub/dir/x.json", "t/local/sub/dir/x.json"),
        ("/abs/x", "t/local/abs/x"),  # taken as relative to the local dir, as Nomad joins it
        ("../x", "t/x"),
        ("../../alloc/shared", "alloc/shared"),  # still inside the alloc dir: Nomad allows it
        ("../../../x", None),
        ("a/../../../../x", None),
    ],
)
def test_where_a_payload_is_written(file: str, path: str | None) -> None:
    assert dispatch_payload_path("t", file) == path


@pytest.mark.parametrize(
    ("text", "data"),
    [("", b""), ("aGVsbG8=", b"hello"), ("aGVsbG8", None), ("aGV sbG8=", None), ("!!!!", None)],
)
def test_payloads_are_padded_standard_base64(text: str, data: bytes | None) -> None:
    assert decode_payload(text) == data


def test_a_parameterized_job_runs_until_stopped_and_its_child_is_derived_as_any_batch_job() -> None:
    parent = prepared(job_doc(ParameterizedJob={}))
    assert derive_job_status(
        parent, has_allocs=False, live_allocs=False, has_evals=False, live_evals=False
    ) == ("running")
    stopped = parent.model_copy(update={"stop": True})
    assert derive_job_status(
        stopped, has_allocs=False, live_allocs=False, has_evals=False, live_evals=False
    ) == ("dead")
    child = parent.model_copy(update={"dispatched": True, "id": "p/dispatch-1-abcdef12"})
    assert (
        derive_job_status(child, has_allocs=False, live_allocs=False, has_evals=True, live_evals=True)
        == "pending"
    )
    assert (
        derive_job_status(child, has_allocs=True, live_allocs=False, has_evals=True, live_evals=False)
        == "dead"
    )


def test_a_summary_counts_allocs_by_group_and_children_by_status() -> None:
    job = prepared(job_doc(ParameterizedJob={})).model_copy(update={"create_index": 3, "modify_index": 9})
    counts = [
        ("g", "running", 2),
        ("g", "pending", 1),
        ("g", "failed", 1),
        ("gone", "running", 5),
        ("g", "odd", 1),
    ]
    summary = job_summary(job, counts, ["pending", "running", "dead", "dead", "unknown-status"]).to_api()
    assert summary == {
        "JobID": "p",
        "Namespace": "default",
        "Summary": {
            "g": {
                "Queued": 0,
                "Complete": 0,
                "Failed": 1,
                "Running": 2,
                "Starting": 1,
                "Lost": 0,
                "Unknown": 0,
            }
        },
        "Children": {"Pending": 1, "Running": 1, "Dead": 2},
        "CreateIndex": 3,
        "ModifyIndex": 9,
    }
