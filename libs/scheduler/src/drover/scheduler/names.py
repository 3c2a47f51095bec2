"""Alloc names ``<job>.<group>[<index>]``: new names take the lowest free index; scale-down
removes the highest first."""

from __future__ import annotations

from collections.abc import Iterable

from drover.model import Allocation


def alloc_name(job_id: str, group: str, index: int) -> str:
    return f"{job_id}.{group}[{index}]"


class AllocNameIndex:
    """Which indexes of a group are taken, for choosing names of new and removed allocs."""

    def __init__(self, job_id: str, group: str, count: int, taken: Iterable[Allocation]) -> None:
        self.job_id = job_id
        self.group = group
        self.count = count
        self.used: set[int] = set()
        for a in taken:
            i = a.index()
            if i >= 0:
                self.used.add(i)

    def name(self, index: int) -> str:
        return alloc_name(self.job_id, self.group, index)

    def unset_index(self, index: int) -> None:
        self.used.discard(index)

    def highest(self, n: int) -> set[str]:
        """Names of the `n` highest taken indexes; they are released."""
        out: set[str] = set()
        for i in sorted(self.used, reverse=True)[:n]:
            out.add(self.name(i))
            self.used.discard(i)
        return out

    def next(self, n: int) -> list[str]:
        """`n` new names: free indexes below count, lowest first, then beyond count."""
        out: list[str] = []
        i = 0
        while len(out) < n:
            if i not in self.used:
                self.used.add(i)
                out.append(self.name(i))
            i += 1
        return out

    def next_canaries(
        self, n: int, canaries: Iterable[Allocation], destructive: Iterable[Allocation]
    ) -> list[str]:
        """Canary names: first the names of allocs being destructively updated that no canary
        uses yet (lowest index first), then free indexes, then beyond count."""
        have = {c.name for c in canaries}
        out: list[str] = []
        for a in sorted(destructive, key=lambda x: x.index()):
            if len(out) >= n:
                return out
            if a.name not in have and a.name not in out:
                out.append(a.name)
        i = 0
        while len(out) < n:
            name = self.name(i)
            if i not in self.used and name not in have and name not in out:
                self.used.add(i)
                out.append(name)
            i += 1
        return out
