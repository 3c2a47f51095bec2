"""What changed at each log position, for blocking queries.

A Nomad blocking query (`?index=N&wait=`) returns once what it reads has changed after index N
(Nomad watches the state store's radix nodes the query read), not on any write to the cluster:
a client agent waiting on its node's allocs sleeps through plans for other nodes. Drover's
append names the keys it touched in its commit's notification (`notify_payloads`), and the
API wakes only the queries waiting on one of them (`ChangeIndex`).

Keys: `job:<namespace>/<id>` (the job, its versions, allocs, evals and deployments),
`node:<id>` (the node and the allocs on it), `alloc:<id>`, `eval:<id>` (the eval and the
allocs it placed), `deployment:<id>` (the deployment and its allocs), `children:<namespace>/<id>`
(the job's children: what its summary counts), `var:<namespace>/<path>` (a variable),
`namespace:<name>` (a namespace), `acl` (any ACL policy or token: what the API's resolved tokens
are invalidated by), one per table (`jobs`, `nodes`, `allocs`, `evals`, `deployments`,
`variables`, `namespaces`, `acl_policies`, `acl_tokens`) for the lists of every namespace, and one
per table and namespace (`jobs@<namespace>`, ...) for the lists of one. Where a commit touched
more allocs than are worth naming, it names their category (`alloc`) instead: every alloc key
counts as changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

# Allocs a commit names one by one; above it, their category (queries on a single alloc are
# few; the nodes a large plan touched are named, each one's agent waits on it).
ALLOC_KEYS_MAX = 64
# Postgres refuses a NOTIFY payload of 8,000 bytes or more.
PAYLOAD_MAX = 7900
# Keys remembered one by one before they are forgotten into the floor.
KEYS_KEPT = 200_000


def job_key(namespace: str, job_id: str) -> str:
    return f"job:{namespace}/{job_id}"


def children_key(namespace: str, job_id: str) -> str:
    return f"children:{namespace}/{job_id}"


# What a child's ID adds to its parent's: a dispatched child, a periodic launch.
_LAUNCH_SUFFIXES = ("/dispatch-", "/periodic-")


def parent_keys(namespace: str, job_id: str) -> list[str]:
    """The children keys of the parent a change to job `job_id` (or its allocs or evals) counts
    for, the parent read from the child's ID as Nomad's ParentIDFromJobID does (the change
    names jobs by ID). Each place the ID could split is named: a parent whose own ID holds a
    suffix is still woken."""
    out = []
    for suffix in _LAUNCH_SUFFIXES:
        i = job_id.find(suffix, 1)
        while i > 0:
            out.append(children_key(namespace, job_id[:i]))
            i = job_id.find(suffix, i + 1)
    return out


# Every change to service registrations (their reads are few and answer from one table).
SERVICES_KEY = "services"
# Every change to the namespace catalogue.
NAMESPACES_KEY = "namespaces"
# The namespace that stands for every one in a list read (Nomad's sentinel).
_ALL_NAMESPACES = "*"


def namespace_key(name: str) -> str:
    return f"namespace:{name}"


def list_key(table: str, namespace: str) -> str:
    """The key of `table`'s rows in one namespace (`jobs@prod`); the table's own key (`jobs`)
    changes with every namespace's."""
    return f"{table}@{namespace}"


def list_keys(table: str, namespace: str) -> list[str]:
    """What a list read of `table` in `namespace` (`*`: every one) waits on."""
    return [table] if namespace == _ALL_NAMESPACES else [list_key(table, namespace)]


# Every change to an ACL policy or token.
ACL_KEY = "acl"
# Every change to the node pools, and to the scheduler configuration.
NODE_POOLS_KEY = "node_pools"
SCHEDULER_CONFIG_KEY = "scheduler_config"


def node_key(node_id: str) -> str:
    return f"node:{node_id}"


def alloc_key(alloc_id: str) -> str:
    return f"alloc:{alloc_id}"


def eval_key(eval_id: str) -> str:
    return f"eval:{eval_id}"


def deployment_key(deployment_id: str) -> str:
    return f"deployment:{deployment_id}"


def restart_key(restart_id: str) -> str:
    return f"restart:{restart_id}"


def variable_key(namespace: str, path: str) -> str:
    return f"var:{namespace}/{path}"


def category(key: str) -> str:
    """`node` for `node:n1`; a table key is its own category."""
    return key.split(":", 1)[0]


def notify_payloads(position: int, keys: Iterable[str], every: Iterable[str] = ()) -> list[str]:
    """The notifications of a commit at `position` that changed `keys` and every key of the
    categories `every`: JSON objects `{"Index": position, "Keys": [...], "All": [...]}` of
    under PAYLOAD_MAX bytes each, as many as the keys need. Built under the events lock, so
    by lengths rather than key by key."""
    head = '{"Index":' + str(position) + ',"Keys":'
    budget = PAYLOAD_MAX - len(head) - 64
    parts: list[list[str]] = []
    part: list[str] = []
    size = 0
    for k in keys:
        size += len(k) + 3
        if size > budget and part:
            parts.append(part)
            part, size = [], len(k) + 3
        part.append(k)
    parts.append(part)
    tail = ',"All":' + json.dumps(list(every)) + "}" if every else "}"
    payloads: list[str] = []
    for i, part in enumerate(parts):
        _render(head, part, tail if i == len(parts) - 1 else "}", payloads)
    return payloads


def _render(head: str, part: list[str], tail: str, out: list[str]) -> None:
    payload = head + json.dumps(part, ensure_ascii=False, separators=(",", ":")) + tail
    if len(part) > 1 and len(payload.encode()) >= PAYLOAD_MAX:  # keys that escape long
        half = len(part) // 2
        _render(head, part[:half], "}", out)
        _render(head, part[half:], tail, out)
    else:
        out.append(payload)


def parse_payload(payload: str) -> tuple[int, list[str], list[str]]:
    """(position, keys, categories) of a notification; a bare position (an append that named
    nothing) changes every key."""
    if payload.startswith("{"):
        doc = json.loads(payload)
        return int(doc["Index"]), list(doc.get("Keys", [])), list(doc.get("All", []))
    return int(payload), [], ["*"]


class ChangeIndex:
    """The last position at which each key changed, as far as this process has heard. A key
    never heard of changed at or before `floor` (what it knew when it started, or last
    forgot): a query waiting from below the floor cannot be told it is current, so it is
    answered."""

    def __init__(self, floor: int = 0) -> None:
        self.floor = floor
        self.index = floor
        self._changed: dict[str, int] = {}
        self._every: dict[str, int] = {}

    def last_change(self, key: str) -> int:
        return max(
            self._changed.get(key, self.floor), self._every.get(category(key), 0), self._every.get("*", 0)
        )

    def changed_after(self, keys: Iterable[str], index: int) -> bool:
        return any(self.last_change(k) > index for k in keys)

    def note(self, position: int, keys: Iterable[str], categories: Iterable[str] = ()) -> None:
        self.index = max(self.index, position)
        for k in keys:
            self._changed[k] = position
        for c in categories:
            self._every[c] = position
        if len(self._changed) > KEYS_KEPT:
            self.forget(self.index)

    def forget(self, position: int) -> None:
        """Everything may have changed up to `position` (keys forgotten, or notifications
        missed while the connection was away)."""
        self.floor = max(self.floor, position)
        self.index = max(self.index, position)
        self._changed.clear()
