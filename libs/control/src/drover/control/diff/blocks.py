"""Diffs of the other blocks of a job, a group and a task, in Nomad's names and shapes: a
group's "Volume"s and "Scaling" (with its "Policy"); a task's "Artifact"s, "Template"s,
"VolumeMount"s, "Vault", "Consul", "Secret"s, "Identity"s, "Action"s, "Schedule" and
"Lifecycle"; a job's "Multiregion" and "UI" (Nomad's volumeDiffs, scalingDiff, templateDiffs,
vaultDiff, secretsDiffs, idSliceDiffs, actionDiffs, multiregionDiff, uiDiff)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drover.control.diff.core import (
    ObjectDiff,
    all_fields_diff,
    block_diff,
    field_diffs,
    flatten_primitive,
    pair_by,
    pair_by_index,
    primitive_object_diff,
    sort_objects,
    string_set_diff,
    type_by_presence,
)
from drover.control.diff.services import identity_diff

Doc = Mapping[str, Any]
Pairs = list[tuple[Doc | None, Doc | None]]

# A scaling policy's members that are the server's, not the operator's.
_SCALING_SKIP = ("ID", "Namespace", "Type", "CreateIndex", "ModifyIndex")
_SCALING_TARGETS = ("Target[Job]", "Target[Group]", "Target[Namespace]")


def _present(diffs: Sequence[ObjectDiff | None]) -> list[ObjectDiff]:
    return [d for d in diffs if d is not None]


def volumes_diff(old: Doc | None, new: Doc | None, contextual: bool) -> list[ObjectDiff]:
    """A group's volumes, matched by name."""
    o, n = old or {}, new or {}
    return sort_objects(
        _present([_volume_diff(o.get(k), n.get(k), contextual) for k in sorted(o.keys() | n.keys())])
    )


def scaling_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    """The group's scaling block: min, max, enabled (never with context), and its policy."""
    kind = type_by_presence(old, new)
    if kind is None:
        return None

    def flat(policy: Doc | None) -> dict[str, str]:
        out = flatten_primitive(policy, maps=("Target",), skip=_SCALING_SKIP)
        return {k: v for k, v in out.items() if k not in _SCALING_TARGETS}

    diff = ObjectDiff(kind, "Scaling", field_diffs(flat(old), flat(new), False))
    policy = all_fields_diff((old or {}).get("Policy"), (new or {}).get("Policy"), "Policy", False)
    diff.objects += _present([policy])
    return diff


def _volume_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "Volume", contextual)
    if diff is None:
        return None
    o, n = (old or {}).get("MountOptions"), (new or {}).get("MountOptions")
    options = block_diff(o, n, "MountOptions", contextual)
    if options is not None:
        flags = string_set_diff(
            (o or {}).get("MountFlags"), (n or {}).get("MountFlags"), "MountFlags", contextual
        )
        options.objects += _present([flags])
        diff.objects.append(options)
    return diff


def task_blocks_diff(old: Doc, new: Doc, contextual: bool) -> list[ObjectDiff]:
    """A task's Vault, Secrets, Consul, Templates, Identities, Actions, VolumeMounts, Schedule
    and Lifecycle, in Nomad's order (which diffs artifacts and services before them)."""
    out = _present([block_diff(old.get("Vault"), new.get("Vault"), "Vault", contextual)])
    secrets = pair_by(old.get("Secrets"), new.get("Secrets"), "Name")
    out += sort_objects(_present([all_fields_diff(o, n, "Secret", contextual) for o, n in secrets]))
    out += _present([primitive_object_diff(old.get("Consul"), new.get("Consul"), "Consul", contextual)])
    out += _templates_diff(old.get("Templates"), new.get("Templates"), contextual)
    out += _present([identity_diff(old.get("Identity"), new.get("Identity"), contextual)])
    identities = pair_by(old.get("Identities"), new.get("Identities"), "Name")
    out += sort_objects(_present([identity_diff(o, n, contextual) for o, n in identities]))
    actions = pair_by_index(old.get("Actions"), new.get("Actions"))
    out += sort_objects(_present([_with_args(block_diff(o, n, "Action", contextual), o, n, contextual)
                                  for o, n in actions]))  # fmt: skip
    mounts = pair_by_index(old.get("VolumeMounts"), new.get("VolumeMounts"))
    out += sort_objects(_present([block_diff(o, n, "VolumeMount", contextual) for o, n in mounts]))
    crons = (old.get("Schedule") or {}).get("Cron"), (new.get("Schedule") or {}).get("Cron")
    out += _present([primitive_object_diff(crons[0], crons[1], "Schedule", contextual)])
    # Nomad's diff leaves a task's lifecycle out; Drover shows it.
    out += _present(
        [primitive_object_diff(old.get("Lifecycle"), new.get("Lifecycle"), "Lifecycle", contextual)]
    )
    return out


def artifacts_diff(
    old: Sequence[Doc] | None, new: Sequence[Doc] | None, contextual: bool
) -> list[ObjectDiff]:
    """Artifacts matched by destination, each its fields and its options' and headers' entries."""
    maps = ("GetterOptions", "GetterHeaders")
    pairs = pair_by(old, new, "RelativeDest")
    return sort_objects(
        _present([primitive_object_diff(o, n, "Artifact", contextual, maps=maps) for o, n in pairs])
    )


def _templates_diff(
    old: Sequence[Doc] | None, new: Sequence[Doc] | None, contextual: bool
) -> list[ObjectDiff]:
    """Templates: one before and one after are the same template; otherwise matched by
    destination."""
    o, n = list(old or ()), list(new or ())
    pairs: Pairs = [(o[0], n[0])] if len(o) == 1 and len(n) == 1 else _match_by_dest(o, n)
    return sort_objects(_present([_template_diff(a, b, contextual) for a, b in pairs]))


def _match_by_dest(old: list[Doc], new: list[Doc]) -> Pairs:
    taken: set[int] = set()
    pairs: Pairs = []
    for tmpl in old:
        match = next(
            (i for i, t in enumerate(new) if i not in taken and t.get("DestPath") == tmpl.get("DestPath")), -1
        )
        if match >= 0:
            taken.add(match)
        pairs.append((tmpl, new[match] if match >= 0 else None))
    return pairs + [(None, t) for i, t in enumerate(new) if i not in taken]


def _template_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "Template", contextual)
    if diff is None:
        return None
    o, n = old or {}, new or {}
    # Nomad names a template's wait block "Template" too.
    wait = all_fields_diff(o.get("Wait"), n.get("Wait"), "Template", contextual)
    script = block_diff(o.get("ChangeScript"), n.get("ChangeScript"), "ChangeScript", contextual)
    script = _with_args(script, o.get("ChangeScript"), n.get("ChangeScript"), contextual)
    diff.objects += _present([wait, script])
    return diff


def _with_args(
    diff: ObjectDiff | None, old: Doc | None, new: Doc | None, contextual: bool
) -> ObjectDiff | None:
    """An action's or change script's Args as a set."""
    if diff is not None:
        diff.objects += _present(
            [string_set_diff((old or {}).get("Args"), (new or {}).get("Args"), "Args", contextual)]
        )
    return diff


def job_blocks_diff(old: Doc, new: Doc, contextual: bool) -> list[ObjectDiff]:
    """The job's Multiregion (its strategy and regions) and UI (its links)."""
    return _present([_multiregion_diff(old.get("Multiregion"), new.get("Multiregion"), contextual),
                     _ui_diff(old.get("UI"), new.get("UI"), contextual)])  # fmt: skip


def _multiregion_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    kind = type_by_presence(old, new)
    if kind is None:
        return None
    o, n = old or {}, new or {}
    diff = ObjectDiff(kind, "Multiregion")
    diff.objects += _present(
        [primitive_object_diff(o.get("Strategy"), n.get("Strategy"), "Strategy", contextual)]
    )
    for a, b in pair_by(o.get("Regions"), n.get("Regions"), "Name"):
        region = primitive_object_diff(a, b, "Region", contextual, maps=("Meta",))
        if region is not None:
            dcs = string_set_diff(
                (a or {}).get("Datacenters"), (b or {}).get("Datacenters"), "Datacenters", contextual
            )
            region.objects += [dcs] if dcs is not None and dcs.type != "None" else []
            diff.objects.append(region)
    diff.objects = sort_objects(diff.objects)
    return diff


def _ui_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "UI", contextual)
    if diff is not None:
        links = pair_by_index((old or {}).get("Links"), (new or {}).get("Links"))
        diff.objects += sort_objects(_present([block_diff(o, n, "Link", contextual) for o, n in links]))
    return diff
