"""Diffs of a group's or task's services, each a "Service" with its tags, checks ("Check", with
its "Header" and "CheckRestart"), identity and weights (Nomad's serviceDiffs, serviceDiff,
serviceCheckDiffs, findServiceMatch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drover.control.diff.core import (
    ObjectDiff,
    all_fields_diff,
    block_diff,
    field_diffs,
    sort_objects,
    string_set_diff,
    type_by_presence,
)

Doc = Mapping[str, Any]

_SERVICE_MAPS = ("Meta", "CanaryMeta", "TaggedAddresses")
# A service's check_restart is given to each of its checks, and shown there.
_SERVICE_SKIP = ("CheckRestart",)
# Nomad's threshold for taking two services as one edited: same name (3), or same port (2) and
# same place in the list (1).
_MATCH_THRESHOLD = 2


def services_diff(old: Sequence[Doc] | None, new: Sequence[Doc] | None, contextual: bool) -> list[ObjectDiff]:
    """Services have no identity: one before and one after are the same service; otherwise each
    is matched to the best unmatched one by name, port and position."""
    o, n = list(old or ()), list(new or ())
    pairs: list[tuple[Doc | None, Doc | None]] = (
        [(o[0], n[0])] if len(o) == 1 and len(n) == 1 else _match(o, n)
    )
    diffs = [service_diff(a, b, contextual) for a, b in pairs]
    return sort_objects([d for d in diffs if d is not None])


def _match(old: list[Doc], new: list[Doc]) -> list[tuple[Doc | None, Doc | None]]:
    taken: set[int] = set()
    pairs: list[tuple[Doc | None, Doc | None]] = []
    for oi, svc in enumerate(old):
        best, match = 0, -1
        for ni, other in enumerate(new):
            if ni in taken:
                continue
            score = (oi == ni) + 2 * (svc.get("PortLabel") == other.get("PortLabel"))
            score += 3 * (svc.get("Name") == other.get("Name"))
            if score > _MATCH_THRESHOLD and score > best:
                best, match = score, ni
        if match < 0:
            pairs.append((svc, None))
        else:
            taken.add(match)
            pairs.append((svc, new[match]))
    return pairs + [(None, svc) for ni, svc in enumerate(new) if ni not in taken]


def service_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "Service", contextual, maps=_SERVICE_MAPS, skip=_SERVICE_SKIP)
    if diff is None:
        return None
    o, n = old or {}, new or {}
    for key in ("CanaryTags", "Tags"):
        tags = string_set_diff(o.get(key), n.get(key), key, contextual)
        if tags is not None:
            diff.objects.append(tags)
    diff.objects += checks_diff(o.get("Checks"), n.get("Checks"), contextual)
    for d in (
        all_fields_diff(o.get("Connect"), n.get("Connect"), "ConsulConnect", contextual),
        identity_diff(o.get("Identity"), n.get("Identity"), contextual),
        _weights_diff(o.get("Weights"), n.get("Weights"), contextual),
    ):
        if d is not None:
            diff.objects.append(d)
    return diff


def checks_diff(old: Sequence[Doc] | None, new: Sequence[Doc] | None, contextual: bool) -> list[ObjectDiff]:
    """Checks matched by name (an unnamed one by its place among the unnamed)."""
    olds, news = _by_name(old), _by_name(new)
    diffs = [_check_diff(olds.get(k), news.get(k), contextual) for k in sorted(olds.keys() | news.keys())]
    return sort_objects([d for d in diffs if d is not None])


def _by_name(checks: Sequence[Doc] | None) -> dict[str, Doc]:
    out: dict[str, Doc] = {}
    for i, c in enumerate(checks or ()):
        out[c.get("Name") or f"\0{i}"] = c
    return out


def _check_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    diff = block_diff(old, new, "Check", contextual)
    if diff is None:
        return None
    o, n = old or {}, new or {}
    header = all_fields_diff(o.get("Header"), n.get("Header"), "Header", contextual)
    restart = block_diff(o.get("CheckRestart"), n.get("CheckRestart"), "CheckRestart", contextual)
    diff.objects += [d for d in (header, restart) if d is not None]
    return diff


def identity_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    """A workload identity: its fields, and its audiences as a set."""
    diff = block_diff(old, new, "Identity", contextual)
    if diff is not None:
        aud = string_set_diff(
            (old or {}).get("Audience"), (new or {}).get("Audience"), "Audience", contextual
        )
        if aud is not None:
            diff.objects.append(aud)
    return diff


def _weights_diff(old: Doc | None, new: Doc | None, contextual: bool) -> ObjectDiff | None:
    """A service's weights: only those above 0 are fields."""
    kind = type_by_presence(old, new)
    if kind is None:
        return None

    def flat(w: Doc | None) -> dict[str, str]:
        return {k: str(w[k]) for k in ("Passing", "Warning") if w and w.get(k, 0) > 0}

    return ObjectDiff(kind, "Weights", field_diffs(flat(old), flat(new), contextual))
