"""The keys the blocking queries wait on (drover.runtime.watches) that a transaction's writes
to the projections change: SqlState.touched, before it flushes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from drover.runtime.store.collected import DELETED
from drover.runtime.watches import (
    ACL_KEY,
    ALLOC_KEYS_MAX,
    alloc_key,
    deployment_key,
    eval_key,
    job_key,
    list_key,
    namespace_key,
    node_key,
    parent_keys,
    restart_key,
    variable_key,
)


def written_keys(
    dirty: Mapping[str, set[Any]],
    job_versions: Iterable[tuple[str, str, int]],
    restarts: Mapping[str, Any],
    caches: Mapping[str, Mapping[Any, Any]],
) -> tuple[set[str], list[str]]:
    """The keys of the rows written (`dirty` by table, the rows in `caches`), and the categories
    of which every key counts as changed (allocs past ALLOC_KEYS_MAX)."""
    keys: set[str] = set()
    every: list[str] = []
    if dirty["nodes"]:
        keys.add("nodes")
        keys.update(node_key(n) for n in dirty["nodes"])
    jobs = set(dirty["jobs"])
    if jobs:
        keys.add("jobs")
        keys.update(job_key(ns, j) for ns, j in jobs)
        keys.update(list_key("jobs", ns) for ns, _ in jobs)
    # A version alone (its Stable flag), or the job's scaling events.
    keys.update(job_key(ns, j) for ns, j, _ in job_versions)
    keys.update(job_key(ns, j) for ns, j in dirty["scaling_events"])
    for ns, path in dirty.get("variables", ()):
        keys.update(("variables", variable_key(ns, path), list_key("variables", ns)))
    for name in dirty.get("namespaces", ()):
        keys.update(("namespaces", namespace_key(name)))
    for table in ("acl_policies", "acl_tokens"):
        if dirty.get(table):
            keys.update((ACL_KEY, table))
    for restart_id in dirty["job_restarts"]:
        r = restarts[restart_id]
        keys.update(("job_restarts", restart_key(restart_id)))
        if r is not DELETED:
            keys.add(job_key(r.namespace, r.job_id))
    name_allocs = len(dirty["allocs"]) <= ALLOC_KEYS_MAX
    if not name_allocs:
        every.append("alloc")
    for table, cache in caches.items():
        if not dirty[table]:
            continue
        keys.add(table)
        # A plan's allocs share one job, eval and deployment: their keys are built only
        # when those change from one alloc to the next, not once per alloc.
        last: tuple[str, str, str, str] = ("", "", "", "")
        for k in dirty[table]:
            obj = cache[k]
            if obj is DELETED:
                continue
            if table == "allocs":
                keys.add(node_key(obj.node_id))
                if name_allocs:
                    keys.add(alloc_key(obj.id))
                seen = (obj.namespace, obj.job_id, obj.eval_id, obj.deployment_id or "")
                if seen != last:
                    last = seen
                    jobs.add((obj.namespace, obj.job_id))
                    keys.update((job_key(obj.namespace, obj.job_id), eval_key(obj.eval_id)))
                    keys.add(list_key(table, obj.namespace))
                    if obj.deployment_id:
                        keys.add(deployment_key(obj.deployment_id))
            else:
                jobs.add((obj.namespace, obj.job_id))
                keys.update((job_key(obj.namespace, obj.job_id), list_key(table, obj.namespace)))
                keys.add(eval_key(obj.id) if table == "evals" else deployment_key(obj.id))
    for ns, job_id in jobs:
        # A child's change is its parent's summary's (the parent counts its children).
        keys.update(parent_keys(ns, job_id))
    return keys, every
