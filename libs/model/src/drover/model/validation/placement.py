"""What decides where allocs go: resources, constraints, affinities and spreads
(structs.Resources, Constraint, Affinity and Spread ``Validate``)."""

from __future__ import annotations

import re

from drover.model.job import (
    AFFINITY_OPERANDS,
    CONSTRAINT_DISTINCT_HOSTS,
    CONSTRAINT_DISTINCT_PROPERTY,
    CONSTRAINT_OPERANDS,
    JOB_TYPE_SYSTEM,
    Affinity,
    Constraint,
    Resources,
    Spread,
)
from drover.model.validation.places import at

# structs.MinResources: the smallest ask a task may make.
MIN_CPU_MHZ = 1
MIN_MEMORY_MB = 10
# structs.MemoryNoLimit: memory_max -1 means "no upper limit".
MEMORY_NO_LIMIT = -1

# Nomad's Affinity.Validate has no case for is_set / is_not_set, so it rejects them although
# drover.model.job.AFFINITY_OPERANDS lists them.
VALID_AFFINITY_OPERANDS = tuple(o for o in AFFINITY_OPERANDS if o not in ("is_set", "is_not_set"))
_COMPARISON_OPERANDS = ("=", "==", "is", "!=", "not", "<", "<=", ">", ">=")
_SET_OPERANDS = ("set_contains", "set_contains_all", "set_contains_any")

# Interpolated constraint attributes Nomad can resolve (structs/constraint.go).
_EXACT_TARGETS = (
    "${node.unique.id}",
    "${node.datacenter}",
    "${node.unique.name}",
    "${node.class}",
    "${node.pool}",
)
_TARGET_PREFIXES = ("${attr.", "${device.", "${meta.")

# One term of a hashicorp/go-version constraint ("version" operand): optional operator, then a
# loose version (any number of numeric segments, optional pre-release and build metadata).
_IDENT = r"[0-9A-Za-z\-~]+(?:\.[0-9A-Za-z\-~]+)*"
_VERSION_TERM = re.compile(
    rf"^\s*(?:=|!=|>=|<=|>|<|~>)?\s*v?\d+(?:\.\d+)*"
    rf"(?:-{_IDENT}|[A-Za-z\-~][0-9A-Za-z\-~]*(?:\.{_IDENT})?)?(?:\+{_IDENT})?\s*$"
)
# The "semver" operand is stricter: no pessimistic operator, at most three numeric segments.
_SEMVER_TERM = re.compile(
    rf"^\s*(?:=|!=|>=|<=|>|<)?\s*v?\d+(?:\.\d+){{0,2}}(?:-{_IDENT})?(?:\+{_IDENT})?\s*$"
)


def constraints_at(where: str, constraints: list[Constraint], *, task_level: bool = False) -> list[str]:
    """The problems of a job's, group's or task's constraints, each placed by its number."""
    out: list[str] = []
    for i, c in enumerate(constraints, 1):
        out.extend(at(f"{where}, constraint {i} ({c})", constraint_problems(c, task_level=task_level)))
    return out


def affinities_at(where: str, affinities: list[Affinity], job_type: str) -> list[str]:
    """The problems of a job's, group's or task's affinities, each placed by its number."""
    if job_type == JOB_TYPE_SYSTEM and affinities:
        return [f"{where}: system jobs may not have affinities"]
    out: list[str] = []
    for i, a in enumerate(affinities, 1):
        out.extend(at(f"{where}, affinity {i} ({a})", affinity_problems(a)))
    return out


def spreads_at(where: str, spreads: list[Spread], job_type: str) -> list[str]:
    """The problems of a job's or group's spreads, each placed by its number and attribute."""
    if job_type == JOB_TYPE_SYSTEM and spreads:
        return [f"{where}: system jobs may not have spreads"]
    out: list[str] = []
    for i, s in enumerate(spreads, 1):
        out.extend(at(f"{where}, spread {i} ({s.attribute or 'no attribute'})", spread_problems(s)))
    return out


def resources_problems(r: Resources) -> list[str]:
    """What is wrong with a task's resources ask (structs.Resources.Validate)."""
    out: list[str] = []
    if r.cores < 0:
        out.append(f"cores {r.cores} is negative")
    elif r.cores > 0 and r.cpu > 0:
        out.append("a task may ask for cpu or for cores, not both")
    if r.cores == 0 and r.cpu < MIN_CPU_MHZ:
        out.append(f"cpu {r.cpu} MHz is below the minimum of {MIN_CPU_MHZ} MHz")
    if r.memory_mb < MIN_MEMORY_MB:
        out.append(f"memory {r.memory_mb} MB is below the minimum of {MIN_MEMORY_MB} MB")
    if r.memory_max_mb not in (0, MEMORY_NO_LIMIT) and r.memory_max_mb < r.memory_mb:
        out.append(f"memory_max {r.memory_max_mb} MB is below memory {r.memory_mb} MB")
    if r.disk_mb < 0:
        out.append(f"disk {r.disk_mb} MB is negative")
    elif r.disk_mb > 0:
        out.append(f"disk {r.disk_mb} MB asked by a task; disk is set on the group's ephemeral_disk")
    return out


def constraint_problems(c: Constraint, *, task_level: bool = False) -> list[str]:
    """What is wrong with one constraint (structs.Constraint.Validate)."""
    out: list[str] = []
    op = c.operand
    if not op:
        out.append("operator is missing")
    elif op not in CONSTRAINT_OPERANDS:
        out.append(f"unknown operator {op!r}")
    elif op in _SET_OPERANDS and not c.rtarget:
        out.append(f"operator {op!r} needs a value (RTarget)")
    elif op == "regexp":
        out.extend(_regexp_problems(c.rtarget))
    elif op == "version" and not _version_constraint_ok(c.rtarget, _VERSION_TERM):
        out.append(f"{c.rtarget!r} is not a valid version constraint")
    elif op == "semver" and not _version_constraint_ok(c.rtarget, _SEMVER_TERM):
        out.append(f"{c.rtarget!r} is not a valid semver constraint")
    elif op == CONSTRAINT_DISTINCT_PROPERTY and c.rtarget:
        if not c.rtarget.isdecimal():
            out.append(f"distinct_property allows a count, and {c.rtarget!r} is not a whole number")
        elif int(c.rtarget) < 1:
            out.append("distinct_property must allow a count of at least 1")
    elif op in ("is_set", "is_not_set") and c.rtarget:
        out.append(f"operator {op!r} takes no value (RTarget), got {c.rtarget!r}")
    elif op in _COMPARISON_OPERANDS and not c.rtarget:
        out.append(f"operator {op!r} needs a value (RTarget)")

    # Every operator except distinct_hosts compares an attribute.
    if op != CONSTRAINT_DISTINCT_HOSTS:
        if not c.ltarget:
            out.append("attribute (LTarget) is empty")
        else:
            out.extend(_attribute_problems(c.ltarget))
    if task_level and op in (CONSTRAINT_DISTINCT_HOSTS, CONSTRAINT_DISTINCT_PROPERTY):
        out.append(f"operator {op!r} is only allowed on jobs and groups, not tasks")
    return out


def _attribute_problems(target: str) -> list[str]:
    # A literal is fine; an interpolation must be one Nomad can resolve on a node.
    if not target.startswith("$"):
        return []
    if not target.startswith("${"):
        return [f"attribute {target!r} lacks its opening brace"]
    if not target.endswith("}"):
        return [f"attribute {target!r} lacks its closing brace"]
    if target in _EXACT_TARGETS or target.startswith(_TARGET_PREFIXES):
        return []
    return [f"attribute {target!r} is not one Nomad can resolve"]


def _regexp_problems(pattern: str) -> list[str]:
    # Python's re differs from Go's RE2 in corners; a pattern either engine rejects is rare.
    try:
        re.compile(pattern)
    except re.error as err:
        return [f"regular expression {pattern!r} does not compile: {err}"]
    return []


def _version_constraint_ok(text: str, term: re.Pattern[str]) -> bool:
    return all(term.match(part) for part in text.split(","))


def affinity_problems(a: Affinity) -> list[str]:
    """What is wrong with one affinity (structs.Affinity.Validate)."""
    out: list[str] = []
    op = a.operand
    if not op:
        out.append("operator is missing")
    elif op not in VALID_AFFINITY_OPERANDS:
        out.append(
            f"{op!r} is not an affinity operator (expected one of {', '.join(VALID_AFFINITY_OPERANDS)})"
        )
    elif op in _SET_OPERANDS and not a.rtarget:
        out.append(f"operator {op!r} needs a value (RTarget)")
    elif op == "regexp":
        out.extend(_regexp_problems(a.rtarget))
    elif op == "version" and not _version_constraint_ok(a.rtarget, _VERSION_TERM):
        out.append(f"{a.rtarget!r} is not a valid version constraint")
    elif op == "semver" and not _version_constraint_ok(a.rtarget, _SEMVER_TERM):
        out.append(f"{a.rtarget!r} is not a valid semver constraint")
    elif op in _COMPARISON_OPERANDS and not a.rtarget:
        out.append(f"operator {op!r} needs a value (RTarget)")
    if not a.ltarget:
        out.append("attribute (LTarget) is empty")
    if a.weight == 0:
        out.append("weight is 0; an affinity needs a non-zero weight")
    elif not -100 <= a.weight <= 100:
        out.append(f"weight {a.weight} is outside -100..100")
    return out


def spread_problems(s: Spread) -> list[str]:
    """What is wrong with one spread (structs.Spread.Validate)."""
    out: list[str] = []
    if not s.attribute:
        out.append("attribute is empty")
    if not 0 < s.weight <= 100:
        out.append(f"weight {s.weight} must be above 0 and at most 100")
    seen: set[str] = set()
    total = 0
    for t in s.spread_target:
        if t.value in seen:
            out.append(f"target {t.value!r} is listed more than once")
        seen.add(t.value)
        if not 0 <= t.percent <= 100:
            out.append(f"target {t.value!r} percent {t.percent} is outside 0..100")
        total += t.percent
    if total > 100:
        out.append(f"target percents add up to {total}, more than 100")
    return out
