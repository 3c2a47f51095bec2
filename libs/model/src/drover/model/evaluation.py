"""Evaluations: the unit of scheduling work, created whenever desired or actual state changes."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from drover.model.alloc import AllocMetric
from drover.model.base import NomadModel
from drover.model.job import Job

EVAL_STATUS_BLOCKED = "blocked"
EVAL_STATUS_PENDING = "pending"
EVAL_STATUS_COMPLETE = "complete"
EVAL_STATUS_FAILED = "failed"
EVAL_STATUS_CANCELED = "canceled"

# TriggeredBy values (Nomad's structs.EvalTrigger*).
TRIGGER_JOB_REGISTER = "job-register"
TRIGGER_JOB_DEREGISTER = "job-deregister"
TRIGGER_PERIODIC_JOB = "periodic-job"
TRIGGER_NODE_DRAIN = "node-drain"
TRIGGER_NODE_UPDATE = "node-update"
TRIGGER_ALLOC_STOP = "alloc-stop"
TRIGGER_SCHEDULED = "scheduled"
TRIGGER_ROLLING_UPDATE = "rolling-update"
TRIGGER_DEPLOYMENT_WATCHER = "deployment-watcher"
TRIGGER_FAILED_FOLLOW_UP = "failed-follow-up"
TRIGGER_MAX_PLANS = "max-plan-attempts"
TRIGGER_RETRY_FAILED_ALLOC = "alloc-failure"
TRIGGER_QUEUED_ALLOCS = "queued-allocs"
TRIGGER_PREEMPTION = "preemption"
TRIGGER_SCALING = "job-scaling"
TRIGGER_MAX_DISCONNECT_TIMEOUT = "max-disconnect-timeout"
TRIGGER_RECONNECT = "reconnect"
# Evals of a change to the job itself: they carry the job's JobModifyIndex, as Nomad's do (a
# node's or a deployment's evals carry none).
JOB_CHANGE_TRIGGERS = frozenset(
    {TRIGGER_JOB_REGISTER, TRIGGER_JOB_DEREGISTER, TRIGGER_SCALING, TRIGGER_PERIODIC_JOB}
)

# Core evals: the garbage collector's work (Nomad's `_core` scheduler), in Nomad's namespace
# "-" at its CoreJobPriority (math.MaxInt16). JobID names the pass.
EVAL_TYPE_CORE = "_core"
CORE_NAMESPACE = "-"
CORE_JOB_PRIORITY = 32767
CORE_JOB_EVAL_GC = "eval-gc"
CORE_JOB_JOB_GC = "job-gc"
CORE_JOB_DEPLOYMENT_GC = "deployment-gc"
CORE_JOB_NODE_GC = "node-gc"
# Not one of Nomad's: job restarts are Drover's, collected like deployments once they end.
CORE_JOB_RESTART_GC = "job-restart-gc"
CORE_JOB_FORCE_GC = "force-gc"


class Evaluation(NomadModel):
    id: str = ""
    namespace: str = "default"
    priority: int = 50
    type: str = "service"
    triggered_by: str = ""
    job_id: str = ""
    job_modify_index: int = 0
    node_id: str = ""
    node_modify_index: int = 0
    deployment_id: str = ""
    status: str = EVAL_STATUS_PENDING
    status_description: str = ""
    wait: int = 0
    wait_until: int = 0
    next_eval: str = ""
    previous_eval: str = ""
    blocked_eval: str = ""
    failed_tg_allocs: dict[str, AllocMetric] = Field(default_factory=dict)
    class_eligibility: dict[str, bool] = Field(default_factory=dict)
    escaped_computed_class: bool = False
    annotate_plan: bool = False
    queued_allocations: dict[str, int] = Field(default_factory=dict)
    snapshot_index: int = 0
    create_index: int = 0
    modify_index: int = 0
    create_time: int = 0
    modify_time: int = 0

    def terminal_status(self) -> bool:
        return self.status in (EVAL_STATUS_COMPLETE, EVAL_STATUS_FAILED, EVAL_STATUS_CANCELED)


def core_eval(job_id: str, now: int) -> Evaluation:
    """A new pending core eval for the garbage collector's pass `job_id` (Nomad's coreJobEval)."""
    return Evaluation(
        id=str(uuid.uuid4()),
        namespace=CORE_NAMESPACE,
        priority=CORE_JOB_PRIORITY,
        type=EVAL_TYPE_CORE,
        triggered_by=TRIGGER_SCHEDULED,
        job_id=job_id,
        status=EVAL_STATUS_PENDING,
        create_time=now,
        modify_time=now,
    )


def job_eval(job: Job, trigger: str, now: int, **fields: Any) -> Evaluation:
    """A new pending eval of `job`, triggered by `trigger` at `now`."""
    return Evaluation(
        id=str(uuid.uuid4()),
        namespace=job.namespace,
        priority=job.priority,
        type=job.type,
        triggered_by=trigger,
        job_id=job.id,
        status=EVAL_STATUS_PENDING,
        create_time=now,
        modify_time=now,
        **fields,
    )
