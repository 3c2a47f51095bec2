"""Drover's pure scheduling core: given a cluster snapshot and an evaluation, return a plan.

No I/O, no wall clock (time is passed in), randomness seeded from the eval.
"""

from drover.scheduler.plan import DesiredUpdates, Plan, PlanResult, SchedulerResult
from drover.scheduler.planapply import apply_plan_result, evaluate_plan
from drover.scheduler.schedule import schedule
from drover.scheduler.state import InMemoryState, StateSnapshot

__all__ = [
    "DesiredUpdates",
    "InMemoryState",
    "Plan",
    "PlanResult",
    "SchedulerResult",
    "StateSnapshot",
    "apply_plan_result",
    "evaluate_plan",
    "schedule",
]
