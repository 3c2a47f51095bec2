"""Many replica allocs' JSON at once, spliced from one skeleton's bytes.

The allocs of a plan are nearly all alike: a replica builds each as a copy of one template with
its own IDs, name and node put in (`InMemoryState.place_columns`), so they share every other
member's object. The event stream writes each one's whole document (a placement of 1,000 allocs
is a megabyte); written one by one, pydantic encodes the same members a thousand times. Here the
members shared by the batch are encoded once, around markers where the others go (the skeleton),
and each alloc's document is the skeleton's pieces joined with its own values' JSON: the same
bytes as `replica_json` (libs/model/tests/test_alloc_json.py compares them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from itertools import repeat
from operator import is_, itemgetter, ne
from typing import Any, cast

from pydantic import TypeAdapter

from drover.model.alloc import Allocation, ReplicaAllocation, members_json, replica_json

# Below this many allocs, each is written on its own (a skeleton costs about two allocs' worth).
SPLICE_FROM = 8

_ORDER = {name: i for i, name in enumerate(ReplicaAllocation.model_fields)}
# Members whose value is written as its type writes it (no serializer on the field, none
# excluded): only these are spliced in; a batch varying in another is written alloc by alloc.
_SERIALIZED_BY_FIELD = {
    field for d in Allocation.__pydantic_decorators__.field_serializers.values() for field in d.info.fields
}
_FIELDS = {
    name: info
    for name, info in ReplicaAllocation.model_fields.items()
    if not info.exclude and not info.metadata and name not in _SERIALIZED_BY_FIELD
}
_VALUE: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(cast(Any, info.annotation)) for name, info in _FIELDS.items()
}
_MARK = _VALUE["id"].serializer.to_json  # a str's JSON


def allocs_json(allocs: Sequence[ReplicaAllocation]) -> list[bytes]:
    """Each alloc's JSON by its aliases, as `replica_json` writes it, in `allocs`' order."""
    if len(allocs) < SPLICE_FROM:
        return [replica_json(a) for a in allocs]
    first = allocs[0].__dict__
    varying = _varying(first, allocs)
    if varying is None or not _FIELDS.keys() >= set(varying):
        return [replica_json(a) for a in allocs]
    pieces = _skeleton(first, varying)
    if pieces is None:
        return [replica_json(a) for a in allocs]
    values = _values(varying)
    writers = [partial(_VALUE[name].serializer.to_json, by_alias=True) for name in varying]
    parts: list[bytes] = [b""] * (2 * len(varying) + 1)
    parts[0::2] = pieces
    out = []
    for a in allocs:
        parts[1::2] = [write(v) for write, v in zip(writers, values(a.__dict__), strict=True)]
        out.append(b"".join(parts))
    return out


def _varying(first: dict[str, Any], allocs: Sequence[ReplicaAllocation]) -> list[str] | None:
    """The members some alloc holds in another object than the first's, in the fields' order;
    None when they do not all hold the same members (one holds a member the class holds for
    the others). Each member is compared down the batch in C: same size and every one of the
    first's members found means the same members."""
    dicts = [a.__dict__ for a in allocs]
    if any(map(ne, map(len, dicts), repeat(len(first)))):
        return None
    varying = []
    try:
        for name, value in first.items():
            if not all(map(is_, map(itemgetter(name), dicts), repeat(value))):
                varying.append(name)
    except KeyError:
        return None
    return sorted(varying, key=_ORDER.__getitem__)


def _skeleton(first: dict[str, Any], varying: list[str]) -> list[bytes] | None:
    """The first alloc's JSON cut where each varying member's value goes; None unless each
    marker is found once, in order (a shared member could hold a marker's text)."""
    marks = [f"\x00splice {i}\x00" for i in range(len(varying))]
    text = members_json({**first, **dict(zip(varying, marks, strict=True))}, warnings=False)
    pieces = []
    for mark in marks:
        written = _MARK(mark)
        before, found, text = text.partition(written)
        if not found or written in text:
            return None
        pieces.append(before)
    pieces.append(text)
    return pieces


def _values(names: list[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """What takes the members `names` from an alloc's members, as a tuple, in C (itemgetter
    answers one name's value bare)."""
    if len(names) > 1:
        return itemgetter(*names)
    if names:
        one = itemgetter(names[0])
        return lambda m: (one(m),)
    return lambda m: ()
