"""Why clients cannot take a task group, client by client: what Nomad's placement metrics only
count (hashicorp/nomad#23810). Each client is judged as the scheduler's feasibility stage
judges it - its status, eligibility, drain, node pool and datacenter, then the job's and the
group's constraints and drivers (drover.scheduler.feasible), then, given what the live allocs use
on each (`usage`), whether the group's resources fit what it has left, naming the dimension it
is out of as the metrics' DimensionExhausted does - and named under its reason."""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.model import Job, Node
from drover.model.job import TaskGroup
from drover.model.node import with_computed_class
from drover.scheduler.feasible import FeasibilityChecker, node_in_job_pool

# Clients named under each reason (the rest counted).
NAMED = 20


@dataclass
class Reason:
    why: str
    count: int = 0
    nodes: list[Node] = field(default_factory=list)


@dataclass
class Verdicts:
    """The reasons, the most clients first, and how many clients could take the group (as far
    as feasibility goes, and capacity when the usage was given)."""

    reasons: list[Reason]
    feasible: int
    total: int
    capacity: bool = False


def exhausted(node: Node, ask: tuple[int, int, int], used: tuple[int, int, int]) -> str:
    """The dimension `ask` does not fit in on `node` with `used` taken ("": it fits), checked
    in the order the scheduler checks them."""
    for dim, cap, u, a in zip(("cpu", "memory", "disk"), node.capacity(), used, ask, strict=True):
        if u + a > cap:
            return dim
    return ""


def judge(
    job: Job, group: TaskGroup, nodes: list[Node], usage: dict[str, tuple[int, int, int]] | None = None
) -> Verdicts:
    reasons: dict[str, Reason] = {}

    def rule_out(why: str, node: Node) -> None:
        r = reasons.setdefault(why, Reason(why))
        r.count += 1
        if len(r.nodes) < NAMED:
            r.nodes.append(node)

    checker = FeasibilityChecker(job)
    r = group.combined_resources()
    ask = (r.cpu, r.memory_mb, r.disk_mb)
    feasible = 0
    for node in sorted(nodes, key=lambda n: (n.name, n.id)):
        if not node_in_job_pool(node, job):
            rule_out(f"not in node pool {job.node_pool!r} and datacenters {', '.join(job.datacenters)}", node)
        elif not node.ready():
            rule_out(f"status {node.status}", node)
        elif not node.eligible():
            rule_out("ineligible for scheduling", node)
        elif node.draining():
            rule_out("draining", node)
        else:
            # Verdicts are cached per computed class: a cluster of few classes is judged fast.
            outcome = checker.check(group, [node if node.computed_class else with_computed_class(node)])
            dim = exhausted(node, ask, usage.get(node.id, (0, 0, 0))) if usage is not None else ""
            if outcome.nodes and dim:
                rule_out(f"exhausted: out of {dim}", node)
            elif outcome.nodes:
                feasible += 1
            else:
                rule_out(next(iter(outcome.constraint_filtered), "filtered"), node)
    ordered = sorted(reasons.values(), key=lambda r: (-r.count, r.why))
    return Verdicts(ordered, feasible, len(nodes), usage is not None)
