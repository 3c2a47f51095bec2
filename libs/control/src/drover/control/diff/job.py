"""Nomad's job Diff between two versions of a job (`/v1/job/:id/plan` with Diff, and
`/v1/job/:id/versions?diffs=true`): the job's, its groups' and its tasks' field and object
changes, each Added, Deleted, Edited or None, and the plan's annotations on them (Nomad's
structs.Job.Diff and scheduler.Annotate). Fields are flattened by Nomad's naming (`Count`,
`Meta[key]`); nested blocks are objects (`Constraint`, `Update`, `Resources`, `Config`...):
networks and resources in `diff.network`, services and checks in `diff.services`, the other
blocks in `diff.blocks`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from drover.control.diff.blocks import (
    artifacts_diff,
    job_blocks_diff,
    scaling_diff,
    task_blocks_diff,
    volumes_diff,
)
from drover.control.diff.core import (
    ADDED,
    DELETED,
    EDITED,
    NONE,
    FieldDiff,
    ObjectDiff,
    block_diff,
    changed,
    config_diff,
    field_diffs,
    fields_api,
    flatten_primitive,
    identity,
    object_set_diff,
    objects_api,
    primitive_object_diff,
    sort_objects,
    string_set_diff,
)
from drover.control.diff.network import networks_diff, resources_diff
from drover.control.diff.services import services_diff
from drover.model import Job
from drover.scheduler.plan import DesiredUpdates

# What a diff leaves out: what changes with every version or is not the operator's spec.
# Update, Reschedule and Migrate at the job level are only defaults for the groups, which carry
# them once the job is canonicalized; a dispatched child's Payload is bytes in Nomad, no field.
JOB_IGNORED = frozenset(
    {"ID", "Status", "StatusDescription", "Version", "Stable", "CreateIndex", "ModifyIndex",
     "JobModifyIndex", "Update", "SubmitTime", "NomadTokenID", "VaultToken", "Payload",
     "Reschedule", "Migrate", "TaskGroups"}
)  # fmt: skip
GROUP_IGNORED = frozenset({"Name", "Tasks"})
TASK_IGNORED = frozenset({"Name", "Config"})

# The blocks each level diffs itself, in Nomad's order: (JSON key, diff name). Blocks of a
# model member not listed here are diffed generically under their JSON key.
_SETS = (("Constraints", "Constraint"), ("Affinities", "Affinity"))
_GROUP_BLOCKS = ("RestartPolicy", "Migrate", "ReschedulePolicy", "EphemeralDisk", "Update")
_TASK_BLOCKS = ("RestartPolicy", "LogConfig", "DispatchPayload")

UPDATE_TYPES = (
    ("ignore", "ignore"), ("place", "create"), ("migrate", "migrate"), ("stop", "destroy"),
    ("canary", "canary"), ("in_place_update", "in-place update"),
    ("destructive_update", "create/destroy update"),
)  # fmt: skip
FORCES_CREATE = "forces create"
FORCES_DESTROY = "forces destroy"
FORCES_INPLACE = "forces in-place update"
FORCES_DESTRUCTIVE = "forces create/destroy update"
# Task objects whose changes the client applies in place (Nomad's annotateTask).
_INPLACE_OBJECTS = frozenset({"Service", "Constraint", "Affinity", "Spread"})


@dataclass
class TaskDiff:
    type: str
    name: str
    fields: list[FieldDiff] = field(default_factory=list)
    objects: list[ObjectDiff] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)

    def to_api(self) -> dict[str, Any]:
        return {"Type": self.type, "Name": self.name, "Fields": fields_api(self.fields),
                "Objects": objects_api(self.objects), "Annotations": self.annotations or None}  # fmt: skip


@dataclass
class TaskGroupDiff:
    type: str
    name: str
    fields: list[FieldDiff] = field(default_factory=list)
    objects: list[ObjectDiff] = field(default_factory=list)
    tasks: list[TaskDiff] = field(default_factory=list)
    updates: dict[str, int] | None = None

    def to_api(self) -> dict[str, Any]:
        return {"Type": self.type, "Name": self.name, "Fields": fields_api(self.fields),
                "Objects": objects_api(self.objects), "Tasks": [t.to_api() for t in self.tasks] or None,
                "Updates": self.updates}  # fmt: skip


@dataclass
class JobDiff:
    type: str
    id: str
    fields: list[FieldDiff] = field(default_factory=list)
    objects: list[ObjectDiff] = field(default_factory=list)
    task_groups: list[TaskGroupDiff] = field(default_factory=list)

    def to_api(self) -> dict[str, Any]:
        return {"Type": self.type, "ID": self.id, "Fields": fields_api(self.fields),
                "Objects": objects_api(self.objects),
                "TaskGroups": [g.to_api() for g in self.task_groups] or None}  # fmt: skip


Doc = Mapping[str, Any]


def job_diff(old: Job | None, new: Job | None, contextual: bool = True) -> JobDiff:
    """The diff from `old` to `new` (either may be None: everything Added, or Deleted). With
    `contextual` (as Nomad's plan and versions give it) an edited block lists its unchanged
    fields too."""
    o = old.to_api() if old is not None else None
    n = new.to_api() if new is not None else None
    kind = ADDED if o is None and n is not None else DELETED if n is None and o is not None else NONE
    ref = n if n is not None else o
    diff = JobDiff(kind, ref["ID"] if ref else "")
    diff.fields = field_diffs(_flat(o, JOB_IGNORED), _flat(n, JOB_IGNORED), False)
    oj, nj = o or {}, n or {}
    datacenters = string_set_diff(oj.get("Datacenters"), nj.get("Datacenters"), "Datacenters", contextual)
    if datacenters is not None and datacenters.type != NONE:
        diff.objects.append(datacenters)
    diff.objects += _set_objects(oj, nj, contextual)
    diff.task_groups = [
        _group_diff(og, ng, contextual) for og, ng in _pair(oj.get("TaskGroups"), nj.get("TaskGroups"))
    ]
    diff.objects += _present([_periodic_diff(oj.get("Periodic"), nj.get("Periodic"), contextual),
                              _parameterized_diff(oj.get("ParameterizedJob"), nj.get("ParameterizedJob"), contextual)])  # fmt: skip
    diff.objects += job_blocks_diff(oj, nj, contextual)
    diff.objects += _other_blocks(oj, nj, JOB_IGNORED | _HANDLED_JOB, contextual)
    if kind == NONE and (changed(diff.fields) or changed(diff.objects) or changed(diff.task_groups)):
        diff.type = EDITED
    return diff


_HANDLED_JOB = frozenset(
    {"Datacenters", "Constraints", "Affinities", "Spreads", "Periodic", "ParameterizedJob", "Meta",
     "Multiregion", "UI"}
)  # fmt: skip
_HANDLED_GROUP = frozenset({"Constraints", "Affinities", "Spreads", "Disconnect", "Meta", "Consul", "Networks",
                            "Scaling", "Services", "Volumes", *_GROUP_BLOCKS})  # fmt: skip
_HANDLED_TASK = frozenset({"Constraints", "Affinities", "Resources", "Env", "Meta", "Artifacts", "Services",
                           "Vault", "Secrets", "Consul", "Templates", "Identity", "Identities", "Actions",
                           "VolumeMounts", "Schedule", "Lifecycle", *_TASK_BLOCKS})  # fmt: skip


def _flat(doc: Doc | None, ignored: frozenset[str]) -> dict[str, str]:
    return flatten_primitive(doc, maps=("Meta", "Env"), skip=ignored)


def _present(diffs: Sequence[ObjectDiff | None]) -> list[ObjectDiff]:
    return [d for d in diffs if d is not None]


def _pair(old: Sequence[Doc] | None, new: Sequence[Doc] | None) -> list[tuple[Doc | None, Doc | None]]:
    """Groups or tasks matched by Name, in name order."""
    olds = {d["Name"]: d for d in old or ()}
    news = {d["Name"]: d for d in new or ()}
    return [(olds.get(name), news.get(name)) for name in sorted(olds.keys() | news.keys())]


def _kind(old: Doc | None, new: Doc | None) -> str:
    if old is None:
        return ADDED
    if new is None:
        return DELETED
    return NONE if old == new else EDITED


def _set_objects(old: Doc, new: Doc, contextual: bool) -> list[ObjectDiff]:
    """Constraints and affinities, then spreads (which Nomad leaves out of its diffs)."""
    out: list[ObjectDiff] = []
    for key, name in _SETS:
        out += object_set_diff(old.get(key), new.get(key), name, contextual)
    return out + _spread_diffs(old.get("Spreads"), new.get("Spreads"), contextual)


def _spread_diffs(old: Sequence[Doc] | None, new: Sequence[Doc] | None, contextual: bool) -> list[ObjectDiff]:
    """Spreads matched by content, as constraints are, each with its targets as objects."""
    olds = {identity(s): s for s in old or ()}
    news = {identity(s): s for s in new or ()}
    out: list[ObjectDiff] = []
    for side, other, gone in ((olds, news, True), (news, olds, False)):
        for key, spread in side.items():
            if key in other:
                continue
            targets = spread.get("SpreadTarget")
            if gone:
                diff = primitive_object_diff(spread, None, "Spread", contextual)
                nested = object_set_diff(targets, None, "SpreadTarget", contextual)
            else:
                diff = primitive_object_diff(None, spread, "Spread", contextual)
                nested = object_set_diff(None, targets, "SpreadTarget", contextual)
            if diff is not None:
                diff.objects = nested
                out.append(diff)
    return sort_objects(out)


def _periodic_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "Periodic", contextual)
    if diff is not None:
        specs = string_set_diff((old or {}).get("Specs"), (new or {}).get("Specs"), "Specs", contextual)
        if specs is not None and specs.type != NONE:
            diff.objects.append(specs)
    return diff


def _parameterized_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "ParameterizedJob", contextual)
    if diff is not None:
        for key in ("MetaOptional", "MetaRequired"):
            diff.objects += _present(
                [string_set_diff((old or {}).get(key), (new or {}).get(key), key, contextual)]
            )
    return diff


def _other_blocks(old: Doc, new: Doc, handled: frozenset[str], contextual: bool) -> list[ObjectDiff]:
    """Blocks of the model that this module does not name (added to the model after it):
    a block as its JSON key, a list of strings as a set, a list of blocks as a set of blocks."""
    out: list[ObjectDiff] = []
    for key in sorted((old.keys() | new.keys()) - handled):
        o, n = old.get(key), new.get(key)
        if isinstance(o, Mapping) or isinstance(n, Mapping):
            out += _present([block_diff(o, n, key, contextual)])
        elif isinstance(o, list) or isinstance(n, list):
            items = [*(o or ()), *(n or ())]
            if all(isinstance(i, Mapping) for i in items):
                out += object_set_diff(o, n, key, contextual)
            else:
                members = string_set_diff(o, n, key, contextual)
                out += [members] if members is not None and members.type != NONE else []
    return out


def _group_diff(old: Doc | None, new: Doc | None, contextual: bool) -> TaskGroupDiff:
    ref = new if new is not None else old
    assert ref is not None
    diff = TaskGroupDiff(_kind(old, new), ref["Name"])
    diff.fields = field_diffs(_flat(old, GROUP_IGNORED), _flat(new, GROUP_IGNORED), False)
    og, ng = old or {}, new or {}
    diff.objects = _set_objects(og, ng, contextual)
    for key in _GROUP_BLOCKS:
        # Stagger is a job-level setting of Nomad's past, never a group's change.
        skip = ("Stagger",) if key == "Update" else ()
        diff.objects += _present([primitive_object_diff(og.get(key), ng.get(key), key, contextual, skip)])
    diff.objects += _present(
        [block_diff(og.get("Disconnect"), ng.get("Disconnect"), "Disconnect", contextual),
         primitive_object_diff(og.get("Consul"), ng.get("Consul"), "Consul", contextual)]
    )  # fmt: skip
    diff.objects += networks_diff(og.get("Networks"), ng.get("Networks"), contextual)
    diff.objects += _present([scaling_diff(og.get("Scaling"), ng.get("Scaling"), contextual)])
    diff.objects += services_diff(og.get("Services"), ng.get("Services"), contextual)
    diff.objects += volumes_diff(og.get("Volumes"), ng.get("Volumes"), contextual)
    diff.objects += _other_blocks(og, ng, GROUP_IGNORED | _HANDLED_GROUP, contextual)
    diff.tasks = [_task_diff(ot, nt, contextual) for ot, nt in _pair(og.get("Tasks"), ng.get("Tasks"))]
    return diff


def _task_diff(old: Doc | None, new: Doc | None, contextual: bool) -> TaskDiff:
    ref = new if new is not None else old
    assert ref is not None
    diff = TaskDiff(_kind(old, new), ref["Name"])
    diff.fields = field_diffs(_flat(old, TASK_IGNORED), _flat(new, TASK_IGNORED), False)
    ot, nt = old or {}, new or {}
    diff.objects = _set_objects(ot, nt, contextual)
    diff.objects += _present([config_diff(ot.get("Config"), nt.get("Config"), contextual)])
    diff.objects += _present([resources_diff(ot.get("Resources"), nt.get("Resources"), contextual)])
    for key in _TASK_BLOCKS:
        diff.objects += _present([primitive_object_diff(ot.get(key), nt.get(key), key, contextual)])
    diff.objects += artifacts_diff(ot.get("Artifacts"), nt.get("Artifacts"), contextual)
    diff.objects += services_diff(ot.get("Services"), nt.get("Services"), contextual)
    diff.objects += task_blocks_diff(ot, nt, contextual)
    diff.objects += _other_blocks(ot, nt, TASK_IGNORED | _HANDLED_TASK, contextual)
    return diff


# --- the plan's annotations ------------------------------------------------------------------


def annotate(diff: JobDiff, desired: Mapping[str, DesiredUpdates]) -> JobDiff:
    """Put the plan's decisions on the diff, as Nomad's scheduler.Annotate: each group's
    Updates (counts by kind), its Count field's "forces create/destroy", and each changed task
    whether it forces a create/destroy update or an in-place one. Changes `diff`; returns it."""
    for group in diff.task_groups:
        updates = desired.get(group.name)
        if updates is not None:
            group.updates = {
                label: getattr(updates, attr) for attr, label in UPDATE_TYPES if getattr(updates, attr)
            }
        for f in group.fields:
            if f.name == "Count":
                before, after = int(f.old or 0), int(f.new or 0)
                f.annotations += (
                    [FORCES_CREATE] if after > before else [FORCES_DESTROY] if after < before else []
                )
        for task in group.tasks:
            _annotate_task(task, group)
    return diff


def _annotate_task(task: TaskDiff, group: TaskGroupDiff) -> None:
    if task.type == NONE:
        return
    if group.type in (ADDED, DELETED) and task.type in (ADDED, DELETED):
        task.annotations.append(FORCES_CREATE if task.type == ADDED else FORCES_DESTROY)
        return
    # Every field but KillTimeout, and every object but those applied in place, needs a new alloc.
    destructive = any(f.name != "KillTimeout" for f in task.fields) or any(
        _destructive_object(o) for o in task.objects
    )
    task.annotations.append(FORCES_DESTRUCTIVE if destructive else FORCES_INPLACE)


def _destructive_object(o: ObjectDiff) -> bool:
    if o.name in _INPLACE_OBJECTS:
        return False
    if o.name == "LogConfig":
        # Turning the logger on or off restarts the task; its sizes do not.
        return any(f.name == "Disabled" for f in o.fields)
    return True


def plan_diff(existing: Job | None, job: Job, desired: Mapping[str, DesiredUpdates]) -> dict[str, Any]:
    """The Diff a plan answers: from the job as it is to the job planned, annotated."""
    return annotate(job_diff(existing, job), desired).to_api()


def version_diffs(versions: Sequence[Job], against: Job | None = None) -> list[dict[str, Any]] | None:
    """The Diffs of `/v1/job/:id/versions?diffs=true`, versions newest first: each version's
    diff from the next older one (the oldest has none), or with `against` from that version."""
    if against is not None:
        diffs = [job_diff(against, v) for v in versions]
    else:
        diffs = [job_diff(older, v) for v, older in pairwise(versions)]
    return [d.to_api() for d in diffs] or None


__all__ = ["JobDiff", "TaskDiff", "TaskGroupDiff", "annotate", "job_diff", "plan_diff", "version_diffs"]
