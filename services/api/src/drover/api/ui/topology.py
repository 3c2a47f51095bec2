"""The topology's picture, kept in the API process: every node's capacity and its live allocs'
CPU and memory (drover.runtime.store.topologyreads), brought up to date from the rows changed
since the log position it was read at, and each node's box rendered once per change, not
once per page. A page of 5,000 nodes is then the joining of boxes already made.

A node's allocs are drawn as segments of two bars (CPU, memory), one per job, group and status:
an alloc alone in its segment links to its page, several to their job's. Past `SEGMENTS` the
smallest are folded into one, so that a node of hundreds of allocs is a box of a few elements."""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from markupsafe import escape

from drover.runtime.store.queries import Reads
from drover.runtime.store.topologyreads import AllocRow, NodeRow

# Segments a bar shows at most (the last of them folds the rest).
SEGMENTS = 3
STATUS_ORDER = {"running": 0, "pending": 1, "unknown": 2}

Group = tuple[str, str]  # (datacenter, node pool)


@dataclass
class Usage:
    cpu: int = 0
    memory_mb: int = 0
    capacity_cpu: int = 0
    capacity_memory_mb: int = 0
    nodes: int = 0
    allocs: int = 0

    def add(self, other: Usage) -> None:
        self.cpu += other.cpu
        self.memory_mb += other.memory_mb
        self.capacity_cpu += other.capacity_cpu
        self.capacity_memory_mb += other.capacity_memory_mb
        self.nodes += other.nodes
        self.allocs += other.allocs

    def pct(self, used: int, whole: int) -> float:
        return min(100.0, 100.0 * used / whole) if whole > 0 else 0.0

    @property
    def cpu_pct(self) -> float:
        return self.pct(self.cpu, self.capacity_cpu)

    @property
    def memory_pct(self) -> float:
        return self.pct(self.memory_mb, self.capacity_memory_mb)


def capacity(n: NodeRow) -> tuple[int, int]:
    """What the scheduler may give out on the node: its resources less those reserved."""
    return max(0, n.cpu - n.reserved_cpu), max(0, n.memory_mb - n.reserved_memory_mb)


def group_of(n: NodeRow) -> Group:
    return (n.datacenter, n.node_pool)


def group_id(g: Group) -> str:
    """A stable element ID for a group (its names may hold any character)."""
    return "g-" + hashlib.sha1(f"{g[0]}\0{g[1]}".encode()).hexdigest()[:10]


def marks(n: NodeRow) -> list[str]:
    """What is wrong with the node for the scheduler, in Nomad's words."""
    out = [] if n.status == "ready" else [n.status]
    if n.draining:
        out.append("draining")
    elif n.eligibility != "eligible":
        out.append("ineligible")
    return out


@dataclass
class _Segment:
    status: str
    cpu: int = 0
    memory_mb: int = 0
    count: int = 0
    first: AllocRow | None = None
    label: str = ""


def segments(allocs: list[AllocRow], limit: int = SEGMENTS) -> list[_Segment]:
    """The node's allocs by job, group and status, the largest (CPU, then memory) first; past
    `limit` the rest folded into the last."""
    by: dict[tuple[str, str, str, str], _Segment] = {}
    for a in allocs:
        s = by.get(key := (a.namespace, a.job_id, a.task_group, a.client_status))
        if s is None:
            s = by[key] = _Segment(a.client_status, first=a, label=f"{a.job_id} / {a.task_group}")
        s.cpu += a.cpu
        s.memory_mb += a.memory_mb
        s.count += 1
    ordered = sorted(
        by.values(), key=lambda s: (-s.cpu, -s.memory_mb, STATUS_ORDER.get(s.status, 3), s.label)
    )
    if len(ordered) <= limit:
        return ordered
    rest = _Segment("more")
    for s in ordered[limit - 1 :]:
        rest.cpu += s.cpu
        rest.memory_mb += s.memory_mb
        rest.count += s.count
    rest.label = f"{rest.count} more allocs"
    return [*ordered[: limit - 1], rest]


def _seg_link(s: _Segment, node_id: str) -> tuple[str, str]:
    """(href, title) of a segment."""
    a, use = s.first, f"{s.cpu} MHz, {s.memory_mb} MiB"
    if a is None:
        return f"/ui/nodes/{node_id}", f"{s.label}: {use}"
    if s.count == 1:
        return f"/ui/allocations/{a.id}", f"{s.label} / {a.id[:8]} ({s.status}): {use}"
    return f"/ui/jobs/{a.job_id}@{a.namespace}", f"{s.label}: {s.count} allocs ({s.status}): {use}"


def box(n: NodeRow, allocs: list[AllocRow]) -> tuple[str, Usage]:
    """The node's box and what it uses: its name linking to its page, its marks, and two bars
    of segments (CPU linking to the allocs, memory drawn alone). Kept short: 5,000 of them
    make a page."""
    cap_cpu, cap_mem = capacity(n)
    used = Usage(
        sum(a.cpu for a in allocs), sum(a.memory_mb for a in allocs), cap_cpu, cap_mem, 1, len(allocs)
    )
    cpu_bar, mem_bar = [], []
    for s in segments(allocs):
        href, title = _seg_link(s, n.id)
        st = escape(s.status)
        cpu_bar.append(f'<a class="s-{st}" style="width:{used.pct(s.cpu, cap_cpu):.1f}%" href="{escape(href)}" '
                       f'title="{escape(title)}"></a>')  # fmt: skip
        mem_bar.append(f'<i class="s-{st}" style="width:{used.pct(s.memory_mb, cap_mem):.1f}%"></i>')
    wrong = marks(n)
    title = escape(f"{n.name or n.id} ({', '.join([n.status, *wrong[1:]] if wrong else [n.status])}): "
                   f"CPU {used.cpu} of {cap_cpu} MHz, memory {used.memory_mb} of {cap_mem} MiB, {len(allocs)} allocs")  # fmt: skip
    badge = "".join(f'<b class="m-{escape(m)}">{escape(m)}</b>' for m in wrong)
    cls = "".join(f" n-{escape(m)}" for m in wrong)
    html = (
        f'<div class="tnode{cls}"><a href="/ui/nodes/{escape(n.id)}" title="{title}">{escape(n.name or n.id[:8])}</a>'
        f'{badge}<span class="tbar">{"".join(cpu_bar)}</span><span class="tbar" aria-hidden="true">{"".join(mem_bar)}</span></div>'
    )
    return html, used


@dataclass
class GroupView:
    group: Group
    id: str
    version: int
    usage: Usage
    boxes: list[str] = field(default_factory=list)


class Topology:
    """The cluster's picture at log position `at`, shared by every request of the process."""

    def __init__(self) -> None:
        self.at = -1  # not read yet
        self.nodes: dict[str, NodeRow] = {}
        self.allocs: dict[str, dict[str, AllocRow]] = defaultdict(dict)  # node -> alloc ID -> row
        self.where: dict[str, str] = {}  # alloc ID -> node
        self.boxes: dict[str, tuple[str, Usage]] = {}
        self.members: dict[Group, dict[str, tuple[str, str]]] = defaultdict(dict)  # node -> its sort key
        self.versions: dict[Group, int] = {}
        self._version = 0
        # What was drawn of a group (or the totals: key None) at its version, kept until it moves.
        self.drawn: dict[Group | None, tuple[int, str]] = {}
        self._lock = threading.RLock()  # held by a read, and by what reads the picture

    def sync(self, reads: Reads, at: int | None = None) -> None:
        """Bring the picture up to the store's position. Given `at`, the position a live
        refresh was woken by, only if the picture is older than that (no read at all when it
        is not). One request reads; those waiting meanwhile take what it read."""
        if at is not None and 0 <= at <= self.at:
            return
        with self._lock:
            if at is not None and 0 <= at <= self.at:
                return
            to = reads.index()
            if to <= self.at:
                return
            since = max(self.at, 0)
            node_rows, ids = reads.topology_nodes(since)
            alloc_rows = reads.topology_allocs(since)
            self._apply(node_rows, ids, alloc_rows)
            self.at = to

    def _apply(self, node_rows: list[NodeRow], ids: set[str], alloc_rows: list[AllocRow]) -> None:
        dirty: set[str] = set()
        touched: set[Group] = set()
        for gone in set(self.nodes) - ids:
            touched.add(g := group_of(self.nodes.pop(gone)))
            self.members[g].pop(gone, None)
            self.boxes.pop(gone, None)
        for n in node_rows:
            if (old := self.nodes.get(n.id)) is not None:
                touched.add(g := group_of(old))
                self.members[g].pop(n.id, None)
            self.nodes[n.id] = n
            self.members[group_of(n)][n.id] = (n.name, n.id)
            dirty.add(n.id)
        for a in alloc_rows:
            if (was := self.where.pop(a.id, None)) is not None:
                self.allocs[was].pop(a.id, None)
                dirty.add(was)
            if a.live:
                self.allocs[a.node_id][a.id] = a
                self.where[a.id] = a.node_id
                dirty.add(a.node_id)
        for node_id in dirty:
            if (row := self.nodes.get(node_id)) is not None:
                self.boxes[node_id] = box(row, list(self.allocs.get(node_id, {}).values()))
                touched.add(group_of(row))
        for g in touched:
            self._version += 1
            self.versions[g] = self._version
            if not self.members[g]:
                del self.members[g], self.versions[g]
                self.drawn.pop(g, None)

    @property
    def latest(self) -> int:
        """The version of the newest change of any group."""
        return self._version

    def draw(self, key: Group | None, version: int, make: Callable[[], str]) -> str:
        """`make()`'s HTML of `key` at `version`, made once per version."""
        hit = self.drawn.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        html = make()
        self.drawn[key] = (version, html)
        return html

    def listing(self) -> list[tuple[Group, int]]:
        """Every group, in order, with its version."""
        with self._lock:
            return sorted(self.versions.items())

    def version(self, g: Group) -> int | None:
        """The group's version (None: no node is in it)."""
        return self.versions.get(g)

    def groups(self, only: Group | None = None) -> list[GroupView]:
        """The nodes by datacenter and node pool (by name within), each group with its usage."""
        with self._lock:
            return self._groups(only)

    def _groups(self, only: Group | None) -> list[GroupView]:
        out = []
        for g in sorted(self.members) if only is None else [only] if only in self.members else []:
            view = GroupView(g, group_id(g), self.versions[g], Usage())
            for _, node_id in sorted(self.members[g].values()):
                html, used = self.boxes[node_id]
                view.boxes.append(html)
                view.usage.add(used)
            out.append(view)
        return out

    def totals(self) -> tuple[Usage, list[Group], dict[str, int]]:
        """The cluster's usage, its groups, and how many nodes bear each mark."""
        total, counts = Usage(), dict[str, int]()
        with self._lock:
            for _, used in self.boxes.values():
                total.add(used)
            for n in self.nodes.values():
                # A draining node is marked draining, and counted among the ineligible too.
                for m in marks(n) + (["ineligible"] if n.draining and n.eligibility != "eligible" else []):
                    counts[m] = counts.get(m, 0) + 1
            return total, sorted(self.members), counts


def groups_key(groups: list[Group]) -> str:
    """A short digest of the groups a page was drawn with (a new one means redraw it all)."""
    return hashlib.sha1(repr(groups).encode()).hexdigest()[:12]
