"""The cluster's scheduler configuration (Nomad's SchedulerConfiguration, `nomad operator
scheduler`): the ranking algorithm, preemption per scheduler type, memory oversubscription,
the load-shedding switches (refusing job registrations, pausing the eval broker) and the node
limit of spread and affinity placements. Its rules and defaults are Nomad's
(nomad/structs/operator.go, nomad/config.go), but for Drover's own `NodeScoring`: which
feasible nodes a placement scores (every one, or Nomad's limit of a few random ones)."""

from __future__ import annotations

from pydantic import Field

from drover.model.base import NomadModel

SCHEDULER_ALGORITHM_BINPACK = "binpack"
SCHEDULER_ALGORITHM_SPREAD = "spread"
SCHEDULER_ALGORITHMS = (SCHEDULER_ALGORITHM_BINPACK, SCHEDULER_ALGORITHM_SPREAD)
# Which feasible nodes a placement of a group without spread or affinity scores: every one
# ("all"), or Nomad's limit ("limit": ceil(log2 n) nodes in a random order for a service, 2 for
# a batch job). Unset: every one under binpack (it packs onto fewer nodes), the limit under
# spread (as Nomad).
NODE_SCORING_ALL = "all"
NODE_SCORING_LIMIT = "limit"
NODE_SCORINGS = (NODE_SCORING_ALL, NODE_SCORING_LIMIT)
# Nodes scored per placement of a group with spread or affinity, unless configured
# (structs.DefaultNodeLimitForFeasibilityChecks).
DEFAULT_NODE_LIMIT_FOR_FEASIBILITY_CHECKS = 100
# Nomad's words for a register, dispatch, revert or scale refused by RejectJobRegistration
# (structs.ErrJobRegistrationDisabled); its HTTP layer answers it with 403.
ERR_JOB_REGISTRATION_DISABLED = (
    "Job registration, dispatch, and scale are disabled by the scheduler configuration"
)


class PreemptionConfig(NomadModel):
    """Whether each scheduler may preempt lower-priority allocs to place its own. A request
    leaving a member out turns it off, as Nomad's decoder does."""

    system_scheduler_enabled: bool = False
    sys_batch_scheduler_enabled: bool = False
    batch_scheduler_enabled: bool = False
    service_scheduler_enabled: bool = False

    def enabled_for(self, job_type: str) -> bool:
        """Whether a job of `job_type` may preempt."""
        return {
            "system": self.system_scheduler_enabled,
            "sysbatch": self.sys_batch_scheduler_enabled,
            "batch": self.batch_scheduler_enabled,
            "service": self.service_scheduler_enabled,
        }.get(job_type, False)


class SchedulerConfiguration(NomadModel):
    """Nomad's SchedulerConfiguration, as the API reads and writes it."""

    scheduler_algorithm: str = SCHEDULER_ALGORITHM_BINPACK
    preemption_config: PreemptionConfig = Field(default_factory=PreemptionConfig)
    memory_oversubscription_enabled: bool = False
    reject_job_registration: bool = False
    pause_eval_broker: bool = False
    node_limit_for_feasibility_checks: int = 0
    node_scoring: str = ""
    create_index: int = 0
    modify_index: int = 0

    def effective_algorithm(self) -> str:
        return self.scheduler_algorithm or SCHEDULER_ALGORITHM_BINPACK

    def node_limit(self) -> int:
        """Nodes scored per placement of a group with spread or affinity."""
        return self.node_limit_for_feasibility_checks or DEFAULT_NODE_LIMIT_FOR_FEASIBILITY_CHECKS

    def scores_every_node(self) -> bool:
        """Whether placements score every feasible node rather than Nomad's limit."""
        if self.node_scoring:
            return self.node_scoring == NODE_SCORING_ALL
        return self.effective_algorithm() == SCHEDULER_ALGORITHM_BINPACK

    def canonicalized(self) -> SchedulerConfiguration:
        """As Nomad stores it: an empty algorithm is binpack."""
        if self.scheduler_algorithm:
            return self
        return self.model_copy(update={"scheduler_algorithm": SCHEDULER_ALGORITHM_BINPACK})


# What a cluster runs with until an operator sets one: binpack, preemption for system jobs
# only (nomad/config.go DefaultConfig's DefaultSchedulerConfig).
DEFAULT_SCHEDULER_CONFIGURATION = SchedulerConfiguration(
    preemption_config=PreemptionConfig(system_scheduler_enabled=True)
)


def algorithm_problems(algorithm: str, where: str = "SchedulerAlgorithm") -> list[str]:
    if algorithm in ("", *SCHEDULER_ALGORITHMS):
        return []
    return [f"invalid scheduler algorithm: {algorithm} ({where} must be binpack or spread)"]


def node_scoring_problems(scoring: str) -> list[str]:
    if scoring in ("", *NODE_SCORINGS):
        return []
    return [f"invalid node scoring: {scoring} (NodeScoring must be all or limit)"]


def scheduler_config_problems(config: SchedulerConfiguration) -> list[str]:
    """Every problem with a configuration an operator sets (Nomad's Validate, and the counts
    Nomad's unsigned fields cannot hold)."""
    out = algorithm_problems(config.scheduler_algorithm) + node_scoring_problems(config.node_scoring)
    if config.node_limit_for_feasibility_checks < 0:
        out.append("NodeLimitForFeasibilityChecks must not be negative")
    return out
