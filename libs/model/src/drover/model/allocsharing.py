"""What a replica's allocs share: most allocs hold equal copies of the resources of their task
group, the (usually empty) desired transition, empty task states and lists, and the record of
which fields were set (read only by canonicalization, which allocs never go through). Allocs
are never changed in place (every change is a model_copy, a rule every reader of a replica
keeps), so sharing is safe; with lean members (`drover.model.alloc.lean_members`) it more than
halves a replica's memory (bench/memory.py)."""

from __future__ import annotations

from typing import Any

from drover.model.alloc import DesiredTransition
from drover.model.job import Resources

# One shared (empty) fields-set for compacted allocs.
NO_FIELDS_SET: set[str] = set()
# Shared empty containers for compacted allocs (never mutated).
SHARED_EMPTY: dict[str, object] = {"task_states": {}, "preempted_allocations": [], "alloc_states": []}


class AllocSharing:
    """The interned objects allocs share, and the last ones seen (the allocs of one plan come in
    sharing one resources and one transition object: looked up once, not per alloc)."""

    def __init__(self) -> None:
        self._interned: dict[tuple[object, ...], object] = {}
        # Each pair holds the object it was seen as, so that one cannot be freed and its id reused.
        self._last_resources: tuple[object, object] = (None, None)
        self._last_transition: tuple[object, object] = (None, None)

    def share(self, fields: dict[str, Any]) -> None:
        """Put the shared copies of what is alike in the allocs of one group into `fields`."""
        r: Resources = fields["resources"]
        seen, shared = self._last_resources
        if r is not seen:
            shared = self._interned.setdefault(
                ("resources", r.cpu, r.cores, r.memory_mb, r.memory_max_mb, r.disk_mb), r
            )
            self._last_resources = (r, shared)
        fields["resources"] = shared
        t: DesiredTransition = fields["desired_transition"]
        seen, shared = self._last_transition
        if t is not seen:
            shared = self._interned.setdefault(
                ("transition", t.migrate, t.reschedule, t.force_reschedule, t.no_shutdown_delay), t
            )
            self._last_transition = (t, shared)
        fields["desired_transition"] = shared
        for name, empty in SHARED_EMPTY.items():
            if not fields[name]:
                fields[name] = empty
