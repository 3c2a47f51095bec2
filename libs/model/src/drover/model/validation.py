"""Job validation: every problem of a (canonicalized) job at once, as readable messages.

The rules follow Nomad's ``Validate`` methods in nomad/structs (Job, TaskGroup, Task, Resources,
Constraint, Affinity, Spread, ReschedulePolicy, RestartPolicy, UpdateStrategy, MigrateStrategy,
DisconnectStrategy, PeriodicConfig); the messages are Drover's own. Each message starts with the
place it is about, e.g. ``Task group 'web': reschedule delay 1s is below the minimum of 5s``.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Iterable

from drover.model.defaults import (
    HEALTH_CHECK_CHECKS,
    HEALTH_CHECK_MANUAL,
    HEALTH_CHECK_TASK_STATES,
    MAX_PRIORITY,
    MIN_PRIORITY,
    RECONCILE_OPTIONS,
    RESTART_MODE_DELAY,
    RESTART_MODE_FAIL,
)
from drover.model.drivers import config_problems
from drover.model.durations import HOUR, MICROSECOND, MILLISECOND, MINUTE, SECOND
from drover.model.job import (
    AFFINITY_OPERANDS,
    CONSTRAINT_DISTINCT_HOSTS,
    CONSTRAINT_DISTINCT_PROPERTY,
    CONSTRAINT_OPERANDS,
    DELAY_FUNCTIONS,
    JOB_TYPE_BATCH,
    JOB_TYPE_SERVICE,
    JOB_TYPE_SYSBATCH,
    JOB_TYPE_SYSTEM,
    JOB_TYPES,
    Affinity,
    Constraint,
    Disconnect,
    Job,
    MigrateStrategy,
    PeriodicConfig,
    ReschedulePolicy,
    Resources,
    RestartPolicy,
    Spread,
    Task,
    TaskGroup,
    UpdateStrategy,
)

# structs.ReschedulePolicyMinDelay / ReschedulePolicyMinInterval / RestartPolicyMinInterval.
RESCHEDULE_MIN_DELAY = 5 * SECOND
RESCHEDULE_MIN_INTERVAL = 15 * SECOND
RESTART_MIN_INTERVAL = 5 * SECOND
# structs.MinResources: the smallest ask a task may make.
MIN_CPU_MHZ = 1
MIN_MEMORY_MB = 10
# structs.EphemeralDisk.Validate.
MIN_EPHEMERAL_DISK_MB = 10
# structs.MemoryNoLimit: memory_max -1 means "no upper limit".
MEMORY_NO_LIMIT = -1

UPDATE_HEALTH_CHECKS = (HEALTH_CHECK_CHECKS, HEALTH_CHECK_TASK_STATES, HEALTH_CHECK_MANUAL)
MIGRATE_HEALTH_CHECKS = (HEALTH_CHECK_CHECKS, HEALTH_CHECK_TASK_STATES)
RESTART_MODES = (RESTART_MODE_FAIL, RESTART_MODE_DELAY)
PERIODIC_SPEC_TYPES = ("cron", "test")

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

# A sanity check of cron specs (Nomad parses them with gorhill/cronexpr): a predefined
# "@" schedule, or 5 to 7 fields made of the characters cron fields use.
_CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?#]+$")


def format_duration(ns: int) -> str:
    """Nanoseconds as Go prints a time.Duration: ``0s``, ``500ms``, ``1.5s``, ``1m30s``, ``1h0m0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    n = abs(ns)
    if n < MICROSECOND:
        return f"{sign}{n}ns"
    if n < MILLISECOND:
        return f"{sign}{_decimal(n, MICROSECOND)}µs"
    if n < SECOND:
        return f"{sign}{_decimal(n, MILLISECOND)}ms"
    hours, rest = divmod(n, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    seconds = f"{_decimal(rest, SECOND)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _decimal(value: int, unit: int) -> str:
    """``value / unit`` written exactly, without trailing zeros (1500, 1000 -> "1.5")."""
    whole, frac = divmod(value, unit)
    if frac == 0:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(width, '0').rstrip('0')}"


def validate_job(job: Job) -> list[str]:
    """Every problem with ``job`` (run it on a canonicalized job); an empty list means valid."""
    problems: list[str] = []
    _add(problems, "Job", _job_problems(job))

    if job.type == JOB_TYPE_SYSTEM and job.affinities:
        problems.append("Job: system jobs may not have affinities")
    else:
        for i, a in enumerate(job.affinities, 1):
            _add(problems, f"Job, affinity {i} ({a})", affinity_problems(a))
    if job.type == JOB_TYPE_SYSTEM and job.spreads:
        problems.append("Job: system jobs may not have spreads")
    else:
        for i, s in enumerate(job.spreads, 1):
            _add(problems, f"Job, spread {i} ({s.attribute or 'no attribute'})", spread_problems(s))
    for i, c in enumerate(job.constraints, 1):
        _add(problems, f"Job, constraint {i} ({c})", constraint_problems(c))
    if job.periodic is not None:
        _add(problems, "Job", _periodic_problems(job.periodic, job.type))

    seen: dict[str, int] = {}
    for idx, tg in enumerate(job.task_groups, 1):
        where = _group_place(tg, idx)
        if tg.name in seen:
            problems.append(f"{where}: group {idx} has the same name as group {seen[tg.name]}")
        elif tg.name:
            seen[tg.name] = idx
        problems.extend(_group_problems(tg, job, where))
    return problems


def _add(problems: list[str], where: str, messages: Iterable[str]) -> None:
    problems.extend(f"{where}: {m}" for m in messages)


def _group_place(tg: TaskGroup, idx: int) -> str:
    return f"Task group '{tg.name}'" if tg.name else f"Task group {idx}"


def _job_problems(job: Job) -> list[str]:
    out: list[str] = []
    if not job.id:
        out.append("ID is missing")
    elif " " in job.id:
        out.append(f"ID {job.id!r} contains a space")
    elif "\0" in job.id:
        out.append(f"ID {job.id!r} contains a null character")
    if not job.name:
        out.append("name is empty")
    elif "\0" in job.name:
        out.append(f"name {job.name!r} contains a null character")
    if not job.namespace:
        out.append("namespace is empty")
    if not job.region:
        out.append("region is empty")
    if not job.type:
        out.append("type is missing")
    elif job.type not in JOB_TYPES:
        out.append(f"unknown job type {job.type!r} (expected one of {', '.join(JOB_TYPES)})")
    if not MIN_PRIORITY <= job.priority <= MAX_PRIORITY:
        out.append(f"priority {job.priority} is outside {MIN_PRIORITY}..{MAX_PRIORITY}")
    if not job.datacenters:
        out.append("no datacenters given")
    elif any(dc == "" for dc in job.datacenters):
        out.append("a datacenter name is empty")
    if not job.task_groups:
        out.append("has no task groups")
    return out


def _periodic_problems(p: PeriodicConfig, job_type: str) -> list[str]:
    if not p.enabled:
        return []
    out: list[str] = []
    if job_type not in (JOB_TYPE_BATCH, JOB_TYPE_SYSBATCH):
        out.append(f"periodic is only allowed for batch and sysbatch jobs, not {job_type!r}")
    if p.spec_type not in PERIODIC_SPEC_TYPES:
        out.append(f"periodic spec type {p.spec_type!r} is unknown (expected cron or test)")
    if not p.spec.strip():
        out.append("periodic is enabled but its spec is empty")
    elif p.spec_type == "cron" and not _cron_looks_valid(p.spec):
        out.append(f"periodic cron spec {p.spec!r} is not a valid cron expression")
    if not _time_zone_exists(p.time_zone):
        out.append(f"periodic time zone {p.time_zone!r} is unknown")
    return out


def _cron_looks_valid(spec: str) -> bool:
    text = spec.strip()
    if text.startswith("@"):
        return text in _CRON_MACROS
    fields = text.split()
    return 5 <= len(fields) <= 7 and all(_CRON_FIELD.match(f) for f in fields)


def _time_zone_exists(name: str) -> bool:
    # Go's time.LoadLocation accepts "", "UTC" and "Local" without a zone database.
    if name in ("", "UTC", "Local"):
        return True
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _group_problems(tg: TaskGroup, job: Job, where: str) -> list[str]:
    out: list[str] = []

    def add(messages: Iterable[str], what: str = "") -> None:
        _add(out, f"{where}{what}", messages)

    if not tg.name:
        out.append(f"{where}: name is empty")
    elif "\0" in tg.name:
        out.append(f"{where}: name contains a null character")
    if tg.count < 0:
        out.append(f"{where}: count {tg.count} is negative")
    elif job.type == JOB_TYPE_SYSTEM and tg.count > 1:
        # Nomad's Job.Validate: a system group runs once per node, so count is 0 or 1.
        out.append(f"{where}: count {tg.count} is above 1, which system jobs do not allow")
    if not tg.tasks:
        out.append(f"{where}: has no tasks")

    for i, c in enumerate(tg.constraints, 1):
        add(constraint_problems(c), f", constraint {i} ({c})")
    if job.type == JOB_TYPE_SYSTEM and tg.affinities:
        out.append(f"{where}: system jobs may not have affinities")
    else:
        for i, a in enumerate(tg.affinities, 1):
            add(affinity_problems(a), f", affinity {i} ({a})")
    if job.type == JOB_TYPE_SYSTEM and tg.spreads:
        out.append(f"{where}: system jobs may not have spreads")
    else:
        for i, s in enumerate(tg.spreads, 1):
            add(spread_problems(s), f", spread {i} ({s.attribute or 'no attribute'})")

    if tg.restart_policy is None:
        out.append(f"{where}: has no restart policy (was the job canonicalized?)")
    else:
        add(restart_problems(tg.restart_policy))

    if job.type in (JOB_TYPE_SYSTEM, JOB_TYPE_SYSBATCH):
        if tg.reschedule_policy is not None:
            out.append(f"{where}: {job.type} jobs run on every node and may not have a reschedule policy")
    elif tg.reschedule_policy is not None:
        add(reschedule_problems(tg.reschedule_policy))
    elif job.type in (JOB_TYPE_SERVICE, JOB_TYPE_BATCH):
        # Only these types have a default; an unknown type is reported once, at the job.
        out.append(f"{where}: has no reschedule policy (was the job canonicalized?)")

    if tg.ephemeral_disk is None:
        out.append(f"{where}: has no ephemeral disk (was the job canonicalized?)")
    elif tg.ephemeral_disk.size_mb < MIN_EPHEMERAL_DISK_MB:
        out.append(
            f"{where}: ephemeral disk {tg.ephemeral_disk.size_mb} MB is below the minimum of "
            f"{MIN_EPHEMERAL_DISK_MB} MB"
        )

    if tg.update is not None:
        if job.type not in (JOB_TYPE_SERVICE, JOB_TYPE_SYSTEM):
            out.append(f"{where}: {job.type} jobs may not have an update block")
        add(update_problems(tg.update))
    if tg.migrate is not None:
        if job.type != JOB_TYPE_SERVICE:
            out.append(f"{where}: {job.type} jobs may not have a migrate block")
        else:
            add(migrate_problems(tg.migrate))
    if tg.disconnect is not None:
        add(disconnect_problems(tg.disconnect, job.type))

    seen: dict[str, int] = {}
    for idx, task in enumerate(tg.tasks, 1):
        if not task.name:
            out.append(f"{where}: task {idx} has no name")
        elif task.name in seen:
            out.append(f"{where}: task {idx} has the same name as task {seen[task.name]} ({task.name!r})")
        else:
            seen[task.name] = idx
    if sum(1 for t in tg.tasks if t.leader) > 1:
        out.append(f"{where}: more than one task is marked as leader")
    for idx, task in enumerate(tg.tasks, 1):
        task_where = f"{where}, task '{task.name}'" if task.name else f"{where}, task {idx}"
        _add(out, task_where, _task_problems(task, tg, job.type))
        for i, c in enumerate(task.constraints, 1):
            _add(out, f"{task_where}, constraint {i} ({c})", constraint_problems(c, task_level=True))
        if job.type == JOB_TYPE_SYSTEM and task.affinities:
            out.append(f"{task_where}: system jobs may not have affinities")
        else:
            for i, a in enumerate(task.affinities, 1):
                _add(out, f"{task_where}, affinity {i} ({a})", affinity_problems(a))
    return out


def _task_problems(task: Task, tg: TaskGroup, job_type: str) -> list[str]:
    out: list[str] = []
    if task.name == "alloc":
        out.append('a task may not be named "alloc" (it is the shared alloc directory)')
    if "/" in task.name or "\\" in task.name:
        out.append("task name contains a slash")
    elif "\0" in task.name:
        out.append("task name contains a null character")
    if not task.driver:
        out.append("no driver given")
    out.extend(config_problems(task.driver, task.config))
    if task.kill_timeout < 0:
        out.append(f"kill timeout {format_duration(task.kill_timeout)} is negative")
    elif (
        job_type == JOB_TYPE_SERVICE
        and tg.update is not None
        and tg.update.progress_deadline > 0
        and task.kill_timeout > tg.update.progress_deadline
    ):
        out.append(
            f"kill timeout {format_duration(task.kill_timeout)} is longer than the group's progress "
            f"deadline {format_duration(tg.update.progress_deadline)}"
        )
    out.extend(resources_problems(task.resources))
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


def reschedule_problems(r: ReschedulePolicy) -> list[str]:
    """What is wrong with a reschedule policy (structs.ReschedulePolicy.Validate, seed 000)."""
    if r.attempts < 0:
        return [f"reschedule attempts {r.attempts} is negative"]
    if not r.enabled():
        # attempts 0 and unlimited false: rescheduling is off and the other fields do not matter.
        return []
    out: list[str] = []
    if r.attempts > 0:
        if r.interval <= 0:
            out.append("reschedule interval must be above 0 when attempts is set")
        if r.unlimited:
            out.append(
                f"reschedule attempts {r.attempts} with unlimited true is ambiguous; "
                "set unlimited false to limit attempts, or attempts 0 for unlimited"
            )

    delays_ok = True
    if r.delay < RESCHEDULE_MIN_DELAY:
        out.append(
            f"reschedule delay {format_duration(r.delay)} is below the minimum of "
            f"{format_duration(RESCHEDULE_MIN_DELAY)}"
        )
        delays_ok = False
    if r.delay_function not in DELAY_FUNCTIONS:
        out.append(
            f"reschedule delay function {r.delay_function!r} is unknown (expected one of "
            f"{', '.join(DELAY_FUNCTIONS)})"
        )
        delays_ok = False
    if r.delay_function != "constant":
        # max_delay caps growing delays; a constant delay ignores it.
        if r.max_delay < RESCHEDULE_MIN_DELAY:
            out.append(
                f"reschedule max delay {format_duration(r.max_delay)} is below the minimum of "
                f"{format_duration(RESCHEDULE_MIN_DELAY)}"
            )
            delays_ok = False
        if r.max_delay < r.delay:
            out.append(
                f"reschedule max delay {format_duration(r.max_delay)} is below the delay "
                f"{format_duration(r.delay)}"
            )
            delays_ok = False

    if not r.unlimited:
        if r.interval < RESCHEDULE_MIN_INTERVAL:
            out.append(
                f"reschedule interval {format_duration(r.interval)} is below the minimum of "
                f"{format_duration(RESCHEDULE_MIN_INTERVAL)}"
            )
        # The attempts-fit-the-interval check needs sane delays to mean anything.
        if delays_ok:
            out.extend(_reschedule_fit_problems(r))
    return out


def _reschedule_fit_problems(r: ReschedulePolicy) -> list[str]:
    fits, possible, needed = _viable_attempts(r)
    if fits:
        return []
    how = f"delay {format_duration(r.delay)}, {r.delay_function}"
    if r.delay_function != "constant":
        how += f", max delay {format_duration(r.max_delay)}"
    rounded = (needed + SECOND // 2) // SECOND * SECOND
    return [
        f"reschedule allows only {possible} of {r.attempts} attempts within the interval "
        f"{format_duration(r.interval)} ({how}); make the interval at least {format_duration(rounded)}"
    ]


def _viable_attempts(r: ReschedulePolicy) -> tuple[bool, int, int]:
    """Whether ``attempts`` delays fit in ``interval``: (fits, attempts that fit, interval needed).

    Same arithmetic as Nomad's ReschedulePolicy.viableAttempts, but in closed form once the
    delay is capped, so a huge attempts count costs nothing. Delay and max_delay are >= 5 s here.
    """
    attempts, interval, delay, cap = r.attempts, r.interval, r.delay, r.max_delay
    if r.delay_function == "constant":
        needed = attempts * delay
        if interval >= needed:
            return True, attempts, needed
        return False, interval // delay, needed

    if r.delay_function == "exponential":
        # The "interval needed" is the latest uncapped delay, then grows by max_delay per capped
        # attempt; an attempt fits while that running figure is below the interval.
        needed = possible = i = 0
        while i < attempts and delay << i <= cap:
            needed = delay << i
            possible += needed < interval
            i += 1
        capped = attempts - i
        if capped:
            room = interval - needed
            possible += max(0, min(capped, -(-room // cap) - 1)) if room > 0 else 0
            needed += capped * cap
        return possible >= attempts, possible, needed

    # fibonacci: slot i is the delay before attempt i; once the cap is hit, slots grow by
    # max_delay each (cap, 2 cap, 3 cap, ...). The last slot is the interval needed.
    slots = [delay, delay]
    capped_at = -1
    while len(slots) < attempts:
        nxt = slots[-1] + slots[-2]
        if nxt > cap:
            slots.append(cap)
            capped_at = len(slots) - 1
            break
        slots.append(nxt)
    last = max(attempts, 2) - 1
    needed = slots[last] if last < len(slots) else cap * (last - capped_at + 1)
    if interval >= needed:
        return True, attempts, needed
    for i, slot in enumerate(slots):
        if slot > interval:
            return False, i, needed
    # Past the cap: slot capped_at + k is (k + 1) * cap, the first above the interval is k = interval // cap.
    return False, capped_at + interval // cap, needed


def restart_problems(r: RestartPolicy) -> list[str]:
    """What is wrong with a restart policy (structs.RestartPolicy.Validate)."""
    out: list[str] = []
    if r.mode not in RESTART_MODES:
        out.append(f"restart mode {r.mode!r} is unknown (expected fail or delay)")
    if r.attempts < 0:
        out.append(f"restart attempts {r.attempts} is negative")
    elif r.attempts == 0 and r.mode != RESTART_MODE_FAIL:
        out.append(f"restart mode {r.mode!r} with 0 attempts is ambiguous")
    if r.delay < 0:
        out.append(f"restart delay {format_duration(r.delay)} is negative")
    if r.interval < RESTART_MIN_INTERVAL:
        out.append(
            f"restart interval {format_duration(r.interval)} is below the minimum of "
            f"{format_duration(RESTART_MIN_INTERVAL)}"
        )
    if r.attempts > 0 and r.attempts * r.delay > r.interval:
        out.append(
            f"restart cannot make {r.attempts} attempts with delay {format_duration(r.delay)} "
            f"within the interval {format_duration(r.interval)}"
        )
    return out


def update_problems(u: UpdateStrategy) -> list[str]:
    """What is wrong with an update block (structs.UpdateStrategy.Validate)."""
    out: list[str] = []
    if u.health_check not in UPDATE_HEALTH_CHECKS:
        out.append(
            f"update health check {u.health_check!r} is unknown (expected one of "
            f"{', '.join(UPDATE_HEALTH_CHECKS)})"
        )
    if u.max_parallel < 0:
        out.append(f"update max_parallel {u.max_parallel} is negative")
    if u.canary < 0:
        out.append(f"update canary {u.canary} is negative")
    elif u.canary == 0 and u.auto_promote:
        out.append("update auto_promote needs at least one canary")
    if u.min_healthy_time < 0:
        out.append(f"update min_healthy_time {format_duration(u.min_healthy_time)} is negative")
    if u.healthy_deadline <= 0:
        out.append(f"update healthy_deadline {format_duration(u.healthy_deadline)} must be above 0")
    if u.progress_deadline < 0:
        out.append(f"update progress_deadline {format_duration(u.progress_deadline)} is negative")
    if u.min_healthy_time >= u.healthy_deadline:
        out.append(
            f"update min_healthy_time {format_duration(u.min_healthy_time)} must be below "
            f"healthy_deadline {format_duration(u.healthy_deadline)}"
        )
    # progress_deadline 0 means "fail the deployment on the first unhealthy alloc".
    if u.progress_deadline != 0 and u.healthy_deadline >= u.progress_deadline:
        out.append(
            f"update healthy_deadline {format_duration(u.healthy_deadline)} must be below "
            f"progress_deadline {format_duration(u.progress_deadline)}"
        )
    if u.stagger <= 0:
        out.append(f"update stagger {format_duration(u.stagger)} must be above 0")
    return out


def migrate_problems(m: MigrateStrategy) -> list[str]:
    """What is wrong with a migrate block (structs.MigrateStrategy.Validate)."""
    out: list[str] = []
    if m.max_parallel < 0:
        out.append(f"migrate max_parallel {m.max_parallel} is negative")
    if m.health_check == "":
        if m.max_parallel > 0:
            out.append("migrate health check is missing")
    elif m.health_check not in MIGRATE_HEALTH_CHECKS:
        out.append(
            f"migrate health check {m.health_check!r} is unknown (expected one of "
            f"{', '.join(MIGRATE_HEALTH_CHECKS)})"
        )
    if m.min_healthy_time < 0:
        out.append(f"migrate min_healthy_time {format_duration(m.min_healthy_time)} is negative")
    if m.healthy_deadline < 0:
        out.append(f"migrate healthy_deadline {format_duration(m.healthy_deadline)} is negative")
    if m.min_healthy_time > m.healthy_deadline:
        out.append(
            f"migrate min_healthy_time {format_duration(m.min_healthy_time)} is above healthy_deadline "
            f"{format_duration(m.healthy_deadline)}"
        )
    return out


def disconnect_problems(d: Disconnect, job_type: str) -> list[str]:
    """What is wrong with a disconnect block (structs.DisconnectStrategy.Validate).

    Nomad tells an unset stop_on_client_after (nil) from 0; the model cannot, so 0 means unset.
    """
    out: list[str] = []
    if d.lost_after < 0:
        out.append(f"disconnect lost_after {format_duration(d.lost_after)} is negative")
    if d.stop_on_client_after < 0:
        out.append(f"disconnect stop_on_client_after {format_duration(d.stop_on_client_after)} is negative")
    if d.stop_on_client_after != 0:
        if job_type not in (JOB_TYPE_SERVICE, JOB_TYPE_BATCH):
            out.append(
                f"disconnect stop_on_client_after is only for service and batch jobs, not {job_type!r}"
            )
        if d.lost_after != 0:
            out.append("disconnect may set lost_after or stop_on_client_after, not both")
    if d.reconcile not in ("", *RECONCILE_OPTIONS):
        out.append(
            f"disconnect reconcile {d.reconcile!r} is unknown "
            f"(expected one of {', '.join(RECONCILE_OPTIONS)})"
        )
    return out


__all__ = [
    "affinity_problems",
    "constraint_problems",
    "disconnect_problems",
    "format_duration",
    "migrate_problems",
    "reschedule_problems",
    "resources_problems",
    "restart_problems",
    "spread_problems",
    "update_problems",
    "validate_job",
]
