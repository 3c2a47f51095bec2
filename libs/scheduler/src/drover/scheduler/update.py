"""Change detection between job versions: which edits need a new alloc (destructive) and which
the existing alloc can take in place."""

from __future__ import annotations

from drover.model import Job, Task


def _task_changed(a: Task, b: Task) -> bool:
    return (
        a.driver != b.driver
        or a.user != b.user
        or a.config != b.config
        or a.env != b.env
        or a.meta != b.meta
        or a.kill_timeout != b.kill_timeout
        or a.leader != b.leader
        or a.resources != b.resources
    )


def tasks_updated(new: Job, old: Job, group: str) -> bool:
    """True when the group's allocs must be replaced: tasks added, removed or changed (driver,
    config, env, user, resources, meta), the ephemeral disk changed, or job/group meta changed.
    Count, constraints, affinities, spreads, update/reschedule/restart policies are in-place."""
    a, b = new.lookup_task_group(group), old.lookup_task_group(group)
    if a is None or b is None:
        return True
    if len(a.tasks) != len(b.tasks):
        return True
    if a.ephemeral_disk != b.ephemeral_disk:
        return True
    if a.meta != b.meta or new.meta != old.meta:
        return True
    old_tasks = {t.name: t for t in b.tasks}
    for t in a.tasks:
        o = old_tasks.get(t.name)
        if o is None or _task_changed(t, o):
            return True
    return False
