"""The parts of Nomad's diffs of two objects that know nothing of jobs: field and object diffs,
values flattened to strings by Nomad's naming (`Meta[key]`, `args[0]`), sets of blocks and of
strings, and Nomad's orderings. Objects are Nomad's JSON (what `to_api` gives)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

ADDED = "Added"
DELETED = "Deleted"
EDITED = "Edited"
NONE = "None"

# Nomad sorts Edited first, then Added, Deleted, None.
_TYPE_RANK = {EDITED: 0, ADDED: 1, DELETED: 2, NONE: 3}

Flat = dict[str, str]


@dataclass
class FieldDiff:
    type: str
    name: str
    old: str = ""
    new: str = ""
    annotations: list[str] = field(default_factory=list)

    def to_api(self) -> dict[str, Any]:
        return {"Type": self.type, "Name": self.name, "Old": self.old, "New": self.new,
                "Annotations": self.annotations or None}  # fmt: skip


@dataclass
class ObjectDiff:
    type: str
    name: str
    fields: list[FieldDiff] = field(default_factory=list)
    objects: list[ObjectDiff] = field(default_factory=list)

    def to_api(self) -> dict[str, Any]:
        return {"Type": self.type, "Name": self.name, "Fields": fields_api(self.fields),
                "Objects": objects_api(self.objects)}  # fmt: skip


def fields_api(fields: Sequence[FieldDiff]) -> list[dict[str, Any]] | None:
    """Nomad sends an empty list as null (Go's nil slice)."""
    return [f.to_api() for f in fields] or None


def objects_api(objects: Sequence[ObjectDiff]) -> list[dict[str, Any]] | None:
    return [o.to_api() for o in objects] or None


class Typed(Protocol):
    type: str


def changed(diffs: Iterable[Typed]) -> bool:
    return any(d.type != NONE for d in diffs)


# --- flattening -------------------------------------------------------------------------------


def value_str(v: Any) -> str:
    """A scalar as Go's `%v` prints it: true/false, integers in full, floats shortest."""
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isfinite(v) and v == int(v) and abs(v) < 1e21:
            return str(int(v))
        return repr(v).replace("e-0", "e-").replace("e+0", "e+")
    return str(v)


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool))


def flatten_primitive(
    obj: Mapping[str, Any] | None, maps: Iterable[str] = (), skip: Iterable[str] = ()
) -> Flat:
    """An object's scalar members, and the entries of its string maps `maps` as `Name[key]`
    (Nomad's `Flatten(obj, filter, true)`): nested blocks, lists and unset members are left out."""
    if obj is None:
        return {}
    maps, skip = set(maps), set(skip)
    flat: Flat = {}
    for k, v in obj.items():
        if k in skip:
            continue
        if k in maps and isinstance(v, Mapping):
            flat.update({f"{k}[{mk}]": value_str(mv) for mk, mv in v.items()})
        elif _scalar(v):
            flat[k] = value_str(v)
    return flat


def flatten_all(obj: Any, prefix: str = "") -> Flat:
    """Everything in `obj`, nested maps as `a[b]` and lists as `a[0]` (Nomad's
    `Flatten(obj, nil, false)`, as for a task's Config)."""
    flat: Flat = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            flat.update(flatten_all(v, f"{prefix}[{k}]" if prefix else str(k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            flat.update(flatten_all(v, f"{prefix}[{i}]"))
    else:
        flat[prefix] = value_str(obj)
    return flat


# --- diffs ------------------------------------------------------------------------------------


def field_diff(old: str, new: str, name: str, contextual: bool) -> FieldDiff | None:
    """A field's change: Added from "", Deleted to "", else Edited; unchanged ones only when
    `contextual` (as Type None)."""
    if old == new:
        return FieldDiff(NONE, name, old, new) if contextual else None
    if old == "":
        return FieldDiff(ADDED, name, new=new)
    if new == "":
        return FieldDiff(DELETED, name, old=old)
    return FieldDiff(EDITED, name, old, new)


def field_diffs(old: Flat, new: Flat, contextual: bool) -> list[FieldDiff]:
    diffs = [field_diff(old.get(k, ""), new.get(k, ""), k, contextual) for k in old.keys() | new.keys()]
    return sort_fields([d for d in diffs if d is not None])


def sort_fields(fields: list[FieldDiff]) -> list[FieldDiff]:
    return sorted(fields, key=lambda f: (f.name, f.old, f.new))


def _object_key(o: ObjectDiff) -> tuple[Any, ...]:
    return (o.name, _TYPE_RANK.get(o.type, 4), len(o.fields), len(o.objects),
            [(f.name, f.old, f.new) for f in o.fields])  # fmt: skip


def sort_objects(objects: list[ObjectDiff]) -> list[ObjectDiff]:
    """Nomad's order: by name, then type (Edited, Added, Deleted, None), then size."""
    return sorted(objects, key=_object_key)


def type_by_presence(old: Any, new: Any) -> str | None:
    """Added when there was nothing, Deleted when there is nothing, Edited when unequal, None
    (no diff) when equal; "nothing" is None or empty."""
    if old == new:
        return None
    if not old:
        return ADDED
    if not new:
        return DELETED
    return EDITED


def type_by_fields(fields: Sequence[FieldDiff]) -> str | None:
    """An object's type from its fields' (Nomad's primitiveObjectDiff): Edited if any field
    was edited or some added and some deleted, else Added or Deleted; None if nothing changed."""
    kinds = {f.type for f in fields}
    if EDITED in kinds or {ADDED, DELETED} <= kinds:
        return EDITED
    if ADDED in kinds:
        return ADDED
    if DELETED in kinds:
        return DELETED
    return None


def primitive_object_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, name: str, contextual: bool,
    skip: Iterable[str] = (), maps: Iterable[str] = (),
) -> ObjectDiff | None:  # fmt: skip
    """A block's scalar members, typed by its fields' changes; None when none changed."""
    skip, maps = tuple(skip), tuple(maps)
    fields = field_diffs(flatten_primitive(old, maps, skip), flatten_primitive(new, maps, skip), contextual)
    kind = type_by_fields(fields)
    return None if kind is None else ObjectDiff(kind, name, fields)


def block_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, name: str, contextual: bool,
    maps: Iterable[str] = (), skip: Iterable[str] = (),
) -> ObjectDiff | None:  # fmt: skip
    """A block's scalar members, typed by its presence (Nomad's diffs of Resources, Periodic,
    ParameterizedJob, Disconnect, Service, Template, Vault...); None when equal."""
    kind = type_by_presence(old, new)
    if kind is None:
        return None
    maps, skip = tuple(maps), tuple(skip)
    return ObjectDiff(
        kind,
        name,
        field_diffs(flatten_primitive(old, maps, skip), flatten_primitive(new, maps, skip), contextual),
    )


def all_fields_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, name: str, contextual: bool
) -> ObjectDiff | None:
    """A block flattened whole (`a[b]`, `a[0]`), typed by its presence (Nomad's diffs of a
    scaling Policy, a check's Header, a Secret, a WaitConfig); None when equal."""
    kind = type_by_presence(old or {}, new or {})
    if kind is None:
        return None
    return ObjectDiff(kind, name, field_diffs(flatten_all(old or {}), flatten_all(new or {}), contextual))


def pair_by(
    old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, Any]] | None, key: str
) -> list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]:
    """Blocks matched by a member (a port's Label, a check's Name), in its order; of blocks
    sharing a value the last is taken, as Nomad's maps keep it."""
    olds = {o.get(key, ""): o for o in old or ()}
    news = {n.get(key, ""): n for n in new or ()}
    return [(olds.get(k), news.get(k)) for k in sorted(olds.keys() | news.keys())]


def pair_by_index(
    old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, Any]] | None
) -> list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]:
    """Blocks matched by position (volume mounts, actions): the extra ones added or deleted."""
    o, n = list(old or ()), list(new or ())
    return [(o[i] if i < len(o) else None, n[i] if i < len(n) else None) for i in range(max(len(o), len(n)))]


def config_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, contextual: bool
) -> ObjectDiff | None:
    """A task's driver Config, flattened whole (`args[0]`, `port_map[0][http]`)."""
    kind = type_by_presence(old or {}, new or {})
    if kind is None:
        return None
    return ObjectDiff(kind, "Config", field_diffs(flatten_all(old or {}), flatten_all(new or {}), contextual))


def string_set_diff(
    old: Iterable[str] | None, new: Iterable[str] | None, name: str, contextual: bool
) -> ObjectDiff | None:
    """Two sets of strings as one object of fields all named `name`: the members added,
    removed and (when contextual) kept."""
    olds, news = {value_str(s) for s in old or ()}, {value_str(s) for s in new or ()}
    if olds == news and not contextual:
        return None
    fields = [FieldDiff(DELETED, name, old=s) for s in olds - news]
    fields += [FieldDiff(ADDED, name, new=s) for s in news - olds]
    if contextual:
        fields += [FieldDiff(NONE, name, s, s) for s in olds & news]
    if not fields:
        return None
    added, removed = bool(news - olds), bool(olds - news)
    kind = EDITED if added and removed else ADDED if added else DELETED if removed else NONE
    return ObjectDiff(kind, name, sort_fields(fields))


def identity(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def object_set_diff(
    old: Sequence[Mapping[str, Any]] | None,
    new: Sequence[Mapping[str, Any]] | None,
    name: str,
    contextual: bool,
) -> list[ObjectDiff]:
    """Blocks without an identity (constraints, affinities): matched by their whole content,
    so a changed one is a Deleted and an Added."""
    olds = {identity(o): o for o in old or ()}
    news = {identity(n): n for n in new or ()}
    diffs = [primitive_object_diff(o, None, name, contextual) for k, o in olds.items() if k not in news]
    diffs += [primitive_object_diff(None, n, name, contextual) for k, n in news.items() if k not in olds]
    return sort_objects([d for d in diffs if d is not None])
