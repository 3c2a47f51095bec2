"""Which alloc directories the agent removes (Nomad's client alloc garbage collector), pure:

- an alloc the servers no longer list for this node (they collected it) goes at once, its
  tasks stopped first if they still run;
- of the others, while more than gc_max_allocs are kept, terminal ones go, the longest
  terminal first. Terminal here: its tasks have ended and the servers have heard how (their
  listing shows its client status terminal), so nothing is lost that was not yet reported.
  Live allocs never go for the count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def to_collect(
    kept: Iterable[str],
    listed: Mapping[str, bool] | None,
    terminal_since: Mapping[str, float],
    max_allocs: int,
) -> list[str]:
    """The allocs to remove, of `kept` (those with a directory or a runner here). `listed`:
    the servers' last listing of the node's allocs, each with whether its client status is
    terminal there (None: not heard yet, and nothing is removed); `terminal_since`: when each
    alloc whose tasks have all ended was first seen so here."""
    if listed is None:
        return []
    kept = set(kept)
    forgotten = sorted(a for a in kept if a not in listed)
    left = len(kept) - len(forgotten)
    terminal = sorted((since, a) for a, since in terminal_since.items() if a in kept and listed.get(a, False))
    return forgotten + [a for _, a in terminal[: max(0, left - max_allocs)]]
