"""What one alloc costs a replica, member by member: bench/memory.py's --breakdown.

An alloc's own bytes are those of the objects reachable from it and from no other alloc, node
or job (sys.getsizeof of each, found by walking gc.get_referents): the alloc object, the dict of
its members, and what each member holds of its own (an ID string, a name). The state's indexes
(allocs by ID, by job, by node) are counted per alloc as their dicts' bytes over the allocs.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable
from typing import Any


def _reach(roots: Iterable[object], seen: dict[int, object]) -> dict[int, object]:
    stack = list(roots)
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type):
            continue
        seen[id(o)] = o
        stack.extend(gc.get_referents(o))
    return seen


def breakdown(state: Any) -> dict[str, Any]:
    """Bytes one alloc of `state` (an InMemoryState) holds of its own, by part and member."""
    allocs = list(state.allocs.values())
    one = allocs[len(allocs) // 2 + 5]
    others = [a for a in (allocs[0], allocs[len(allocs) // 2], allocs[-1]) if a is not one]
    shared = _reach([*others, state.nodes, state.jobs], {})
    members = one.__dict__
    own_members: dict[str, int] = {}
    for name in type(one).model_fields:
        if name not in members:
            own_members[name] = 0  # held by the class (drover.model.alloc.HELD_BY_CLASS)
            continue
        owned = _reach([members[name]], {})
        own_members[name] = sum(sys.getsizeof(o) for i, o in owned.items() if i not in shared)
    n = len(allocs)
    index = {
        "allocs": sys.getsizeof(state.allocs) / n,
        "by_job": sum(sys.getsizeof(d) for d in state._by_job.values()) / n,
        "by_node": sum(sys.getsizeof(d) for d in state._by_node.values()) / n,
    }
    parts = {
        "alloc object": sys.getsizeof(one),
        "its members' dict": sys.getsizeof(members),
        "members' own objects": sum(own_members.values()),
        "indexes": round(sum(index.values()), 1),
    }
    return {
        "bytes": {**parts, "total": round(sum(parts.values()), 1)},
        "members_in_dict": len(members),
        "dict_bytes_per_member": round(sys.getsizeof(members) / len(members), 1),
        "members_own_bytes": {k: v for k, v in own_members.items() if v},
        "members_held_by_class": [k for k in type(one).model_fields if k not in members],
        "index_bytes": {k: round(v, 1) for k, v in index.items()},
    }
