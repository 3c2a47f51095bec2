"""The blocks that say what happens over an alloc's life: reschedule, restart, update, migrate and
disconnect (structs.ReschedulePolicy, RestartPolicy, UpdateStrategy, MigrateStrategy and
DisconnectStrategy ``Validate``)."""

from __future__ import annotations

from drover.model.defaults import (
    HEALTH_CHECK_CHECKS,
    HEALTH_CHECK_MANUAL,
    HEALTH_CHECK_TASK_STATES,
    RECONCILE_OPTIONS,
    RESTART_MODE_DELAY,
    RESTART_MODE_FAIL,
)
from drover.model.durations import SECOND, format_duration
from drover.model.job import (
    DELAY_FUNCTIONS,
    JOB_TYPE_BATCH,
    JOB_TYPE_SERVICE,
    Disconnect,
    MigrateStrategy,
    ReschedulePolicy,
    RestartPolicy,
    UpdateStrategy,
)

# structs.ReschedulePolicyMinDelay / ReschedulePolicyMinInterval / RestartPolicyMinInterval.
RESCHEDULE_MIN_DELAY = 5 * SECOND
RESCHEDULE_MIN_INTERVAL = 15 * SECOND
RESTART_MIN_INTERVAL = 5 * SECOND

UPDATE_HEALTH_CHECKS = (HEALTH_CHECK_CHECKS, HEALTH_CHECK_TASK_STATES, HEALTH_CHECK_MANUAL)
MIGRATE_HEALTH_CHECKS = (HEALTH_CHECK_CHECKS, HEALTH_CHECK_TASK_STATES)
RESTART_MODES = (RESTART_MODE_FAIL, RESTART_MODE_DELAY)


def reschedule_problems(r: ReschedulePolicy) -> list[str]:
    """What is wrong with a reschedule policy (Nomad's structs.ReschedulePolicy.Validate)."""
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
