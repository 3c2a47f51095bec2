"""Diffs of what a group or task asks of a node: networks with their ports as objects
("Network", "Static Port", "Dynamic Port", "DNS", "CNIConfig") and a task's Resources with its
networks, devices and NUMA (Nomad's NetworkResource.Diff, portDiffs, Resources.Diff)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drover.control.diff.core import (
    ADDED,
    DELETED,
    EDITED,
    ObjectDiff,
    block_diff,
    field_diffs,
    identity,
    pair_by,
    primitive_object_diff,
    sort_objects,
)

Doc = Mapping[str, Any]

# A network's members Nomad leaves out of its diff (what a node fills in, and mbits, deprecated).
_NETWORK_SKIP = ("Device", "CIDR", "IP", "MBits")
# A dynamic port's value is the node's to choose, and it cannot ignore collisions.
_DYNAMIC_SKIP = ("Value", "IgnoreCollision")


def networks_diff(old: Sequence[Doc] | None, new: Sequence[Doc] | None, contextual: bool) -> list[ObjectDiff]:
    """Networks matched by their whole content, as Nomad hashes them: a changed network is one
    Deleted and one Added, each with all its ports."""
    olds = {identity(o): o for o in old or ()}
    news = {identity(n): n for n in new or ()}
    diffs = [network_diff(o, None, contextual) for k, o in olds.items() if k not in news]
    diffs += [network_diff(None, n, contextual) for k, n in news.items() if k not in olds]
    return sort_objects([d for d in diffs if d is not None])


def network_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "Network", contextual, skip=_NETWORK_SKIP)
    if diff is None:
        return None
    o, n = old or {}, new or {}
    diff.objects += _ports_diff(o.get("ReservedPorts"), n.get("ReservedPorts"), "Static Port", (), contextual)
    diff.objects += _ports_diff(
        o.get("DynamicPorts"), n.get("DynamicPorts"), "Dynamic Port", _DYNAMIC_SKIP, contextual
    )
    for d in (
        _dns_diff(o.get("DNS"), n.get("DNS"), contextual),
        _cni_diff(o.get("CNI"), n.get("CNI"), contextual),
    ):
        if d is not None:
            diff.objects.append(d)
    return diff


def _ports_diff(
    old: Sequence[Doc] | None, new: Sequence[Doc] | None, name: str, skip: tuple[str, ...], contextual: bool
) -> list[ObjectDiff]:
    """Ports matched by label, each an object of its fields."""
    diffs = [primitive_object_diff(o, n, name, contextual, skip) for o, n in pair_by(old, new, "Label")]
    return sort_objects([d for d in diffs if d is not None])


def _dns_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    """A network's DNS: servers, searches and options each one comma-joined field."""
    if old == new:
        return None

    def flat(dns: Doc | None) -> dict[str, str]:
        return {k: ",".join(dns[k]) for k in ("Servers", "Searches", "Options") if dns and dns.get(k)}

    kind = ADDED if old is None else DELETED if new is None else EDITED
    return ObjectDiff(kind, "DNS", field_diffs(flat(old), flat(new), contextual))


def _cni_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    """A network's CNI args, one field per arg."""
    o, n = (old or {}).get("Args") or {}, (new or {}).get("Args") or {}
    return None if o == n else primitive_object_diff(o, n, "CNIConfig", contextual)


def resources_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    """A task's Resources: its numbers, then its (deprecated) networks, devices and NUMA."""
    diff = block_diff(old, new, "Resources", contextual)
    if diff is None:
        return None
    o, n = old or {}, new or {}
    diff.objects += networks_diff(o.get("Networks"), n.get("Networks"), contextual)
    devices = [
        block_diff(od, nd, "Device", contextual)
        for od, nd in pair_by(o.get("Devices"), n.get("Devices"), "Name")
    ]
    diff.objects += sort_objects([d for d in devices if d is not None])
    numa = block_diff(o.get("NUMA"), n.get("NUMA"), "NUMA", contextual)
    if numa is not None:
        diff.objects.append(numa)
    return diff
