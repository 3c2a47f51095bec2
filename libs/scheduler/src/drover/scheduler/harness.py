"""An in-memory harness: run evals through the scheduler, verify and apply their plans, and
follow the evals they create - the whole control loop without I/O, for tests and simulation."""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model import Evaluation
from drover.model.evaluation import EVAL_STATUS_BLOCKED
from drover.scheduler.plan import Plan, PlanResult, SchedulerResult
from drover.scheduler.planapply import apply_plan_result, evaluate_plan, preemption_evals
from drover.scheduler.reconciler import new_uuid_fn
from drover.scheduler.schedule import schedule
from drover.scheduler.state import InMemoryState


@dataclass
class Harness:
    state: InMemoryState = field(default_factory=InMemoryState)
    now: int = 1_700_000_000_000_000_000
    plans: list[Plan] = field(default_factory=list)
    results: list[SchedulerResult] = field(default_factory=list)
    plan_results: list[PlanResult] = field(default_factory=list)
    created_evals: list[Evaluation] = field(default_factory=list)
    max_attempts: int = 5

    def process(self, evaluation: Evaluation, *, full_scan: bool = False) -> SchedulerResult:
        """Schedule `evaluation`, committing its plan; on a partial commit, retry on the new state."""
        self.state.upsert_eval(evaluation)
        res = schedule(self.state, evaluation, self.now, full_scan=full_scan)
        for _ in range(self.max_attempts):
            self.results.append(res)
            self.plans.append(res.plan)
            if res.plan.is_noop():
                break
            pr = evaluate_plan(self.state, res.plan)
            self.plan_results.append(pr)
            # What the plan applier creates with a commit: evals for the jobs it preempted.
            new_id = new_uuid_fn(len(self.plan_results))
            for e in preemption_evals(self.state, pr, self.now, new_id):
                self.state.upsert_eval(e)
                self.created_evals.append(e)
            apply_plan_result(self.state, pr, self.state.index + 1, self.now)
            if not pr.rejected_nodes:
                break
            res = schedule(self.state, evaluation, self.now, full_scan=full_scan)
        for e in res.create_evals:
            self.state.upsert_eval(e)
            self.created_evals.append(e)
        if res.blocked_eval is not None and evaluation.status != EVAL_STATUS_BLOCKED:
            self.state.upsert_eval(res.blocked_eval)
            self.created_evals.append(res.blocked_eval)
        self.state.upsert_eval(res.eval)
        return res
