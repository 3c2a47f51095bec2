"""Nomad's search (nomad/search_endpoint.go): by ID prefix (`/v1/search`) and fuzzy, by the
names inside objects (`/v1/search/fuzzy`), over the contexts Nomad has, each context and each
item kept only where the caller's ACL lets it read, as Nomad filters them.

- Prefix: up to 20 IDs per context whose ID (a node pool's, namespace's name, a variable's
  path) starts with the prefix, and whether there were more (Truncations).
- Fuzzy: the first `limit_query` objects of each context (Nomad's search.limit_query, 20) are
  looked through for names holding the text, case-insensitively: a job's name, its groups',
  tasks' and services' names, its tasks' docker images, exec commands and java classes; an
  alloc's, node's, node pool's, namespace's name; a variable's path. Evals, deployments and
  scaling policies match by ID prefix. Up to `limit_results` (100) per context, best first:
  where the text starts in the name, then the shorter name. Each match names its Scope (the
  namespace and the objects it is inside) so a caller can link to it.

Drover has no CSI plugins or volumes, nor host volumes: those contexts answer nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from drover.acl import ACL
from drover.api.errors import ApiError
from drover.model import Job
from drover.model.namespace import ALL_NAMESPACES
from drover.model.scalingpolicy import job_policies
from drover.runtime.store.queries import Reads

# Nomad's context names (nomad/structs/search.go), in its order.
CONTEXTS = ("allocs", "jobs", "nodes", "node_pools", "evals", "deployment", "plugins", "volumes",
            "scaling_policy", "vars", "namespaces", "host_volumes")  # fmt: skip
# The contexts a fuzzy match of a job can land in besides `jobs`.
JOB_PARTS = ("groups", "services", "tasks", "images", "commands", "classes")
TRUNCATE_LIMIT = 20
LIMIT_QUERY = 20
LIMIT_RESULTS = 100
MIN_TERM_LENGTH = 2
# Where each context's objects live: in a namespace (checked there), or the cluster's.
_NAMESPACED = {"allocs", "jobs", "evals", "deployment", "scaling_policy", "vars", "volumes", "host_volumes"}


@dataclass(frozen=True)
class Caller:
    """What the caller may read: its ACL (None with ACLs off: everything)."""

    acl: ACL | None

    def may(self, context: str, namespace: str) -> bool:
        """Whether the context can be searched in the namespace (Nomad's
        filteredSearchContexts); for `*` a namespaced context is searched and its items kept
        by their own namespace (`sees`)."""
        acl = self.acl
        if acl is None or acl.is_management():
            return True
        if namespace == ALL_NAMESPACES and context in _NAMESPACED:
            return True
        return self._may(acl, context, namespace)

    def sees(self, context: str, namespace: str) -> bool:
        """Whether one item of the context, in `namespace`, is shown."""
        acl = self.acl
        if acl is None or acl.is_management():
            return True
        return self._may(acl, context, namespace)

    @staticmethod
    def _may(acl: ACL, context: str, ns: str) -> bool:
        if context in ("allocs", "jobs", "evals", "deployment"):
            return acl.allow_namespace_operation(ns, "read-job")
        if context == "scaling_policy":
            return acl.allow_namespace_any_of(ns, ("list-scaling-policies", "read-job"))
        if context == "volumes":
            return acl.allow_namespace_any_of(
                ns, ("csi-list-volume", "csi-read-volume", "list-jobs", "read-job")
            )
        if context == "host_volumes":
            return acl.allow_namespace_operation(ns, "host-volume-read")
        if context == "namespaces":
            return acl.allow_namespace(ns)
        if context == "vars":
            return acl.allow_variable_search(ns)
        if context == "nodes":
            return acl.allow_node_read()
        if context == "plugins":
            return acl.allow_plugin_list()
        if context == "node_pools":
            # Any pool rule that is not a deny (Nomad's AllowNodePoolSearch); each pool is then
            # shown by its own rule.
            rules = [*acl.node_pools.values(), *(caps for _, caps in acl.wildcard_node_pools)]
            return any("deny" not in caps for caps in rules)
        return True


def contexts(context: str, caller: Caller, namespace: str) -> list[str]:
    """The contexts a request searches: one, or every one for `all` (those the caller may);
    an unknown one is a 400, one the caller may not search a 403 (Nomad's words)."""
    if context == "all":
        return [c for c in CONTEXTS if caller.may(c, namespace)]
    if context not in CONTEXTS:
        raise ApiError(
            400, f"context must be one of [{' '.join(CONTEXTS)}] or 'all' for all contexts; got {context!r}"
        )
    if not caller.may(context, namespace):
        raise ApiError(403, "Permission denied")
    return [context]


def _scoped(namespace: str) -> str | None:
    return None if namespace == ALL_NAMESPACES else namespace


def _objects(
    reads: Reads, context: str, namespace: str, prefix: str, limit: int
) -> list[tuple[str, str, Any]]:
    """(namespace, ID, object) of the context's objects whose ID starts with `prefix`, by ID,
    at most `limit` (0: all) before the caller's filter."""
    ns = _scoped(namespace)
    if context == "jobs":
        return [(j.namespace, j.id, j) for j in reads.jobs(namespace, prefix, limit=limit)]
    if context == "evals":
        return [(e.namespace, e.id, e) for e in reads.evals(namespace=ns, prefix=prefix, limit=limit)]
    if context == "allocs":
        return [(a.namespace, a.id, a) for a in reads.allocs(namespace=ns, prefix=prefix, limit=limit)]
    if context == "nodes":
        return [("", n.id, n) for n in reads.nodes(prefix, limit=limit)]
    if context == "node_pools":
        return [("", p.name, p) for p in reads.node_pools(prefix)]
    if context == "deployment":
        found = sorted(reads.all_deployments(prefix, namespace), key=lambda d: d.id)
        return [(d.namespace, d.id, d) for d in found]
    if context == "scaling_policy":
        policies = sorted((p for job in reads.jobs(namespace) for p in job_policies(job)), key=lambda p: p.id)
        return [(p.namespace, p.id, p) for p in policies if p.id.startswith(prefix)]
    if context == "vars":
        return [(v.namespace, v.path, v) for v in reads.variables(namespace, prefix, limit=limit)]
    if context == "namespaces":
        return [(n.name, n.name, n) for n in reads.namespaces(prefix)]
    return []  # plugins, volumes, host volumes: Drover has none


def _visible(
    caller: Caller, context: str, items: Iterable[tuple[str, str, Any]]
) -> list[tuple[str, str, Any]]:
    acl = caller.acl
    if context == "node_pools":
        return [i for i in items if acl is None or acl.allow_node_pool_operation(i[1], "read")]
    if context == "namespaces":
        return [i for i in items if caller.sees("namespaces", i[0])]
    if context in _NAMESPACED:
        return [i for i in items if caller.sees(context, i[0])]
    return list(items)


def _first(
    reads: Reads, caller: Caller, context: str, namespace: str, prefix: str, n: int
) -> tuple[list[tuple[str, str, Any]], bool]:
    """The first `n` visible objects of the context by ID prefix, and whether there are more.
    Reads grow until enough pass the caller's filter (most calls: one read)."""
    limit = n + 1
    while True:
        found = _objects(reads, context, namespace, prefix, limit)
        shown = _visible(caller, context, found)
        if len(shown) > n or len(found) < limit:
            return shown[:n], len(shown) > n
        limit *= 4


def prefix_search(reads: Reads, caller: Caller, namespace: str, prefix: str, context: str) -> dict[str, Any]:
    """Nomad's SearchResponse: Matches (IDs, null where none) and Truncations per context."""
    matches: dict[str, list[str] | None] = {}
    truncations: dict[str, bool] = {}
    for ctx in contexts(context, caller, namespace):
        found, more = _first(reads, caller, ctx, namespace, prefix, TRUNCATE_LIMIT)
        matches[ctx] = [object_id for _, object_id, _ in found] or None
        truncations[ctx] = more
    return {"Matches": matches, "Truncations": truncations}


@dataclass(frozen=True)
class _Fuzzy:
    id: str
    score: int
    scope: tuple[str, ...]

    def to_api(self) -> dict[str, Any]:
        return {"ID": self.id, "Scope": list(self.scope)} if self.scope else {"ID": self.id}


def _at(name: str, text: str) -> int:
    return name.lower().find(text)


def _job_matches(job: Job, text: str) -> Iterable[tuple[str, _Fuzzy]]:
    """What of a job holds the text (nomad's fuzzyMatchesJob), by context."""
    ns, jid = job.namespace, job.id

    def hit(ctx: str, name: str, *scope: str) -> Iterable[tuple[str, _Fuzzy]]:
        if name and (i := _at(name, text)) >= 0:
            yield ctx, _Fuzzy(name, i, (ns, jid, *scope))

    yield from hit("jobs", job.name or job.id)
    for group in job.task_groups:
        yield from hit("groups", group.name)
        for service in group.services:
            yield from hit("services", service.name, group.name)
        for task in group.tasks:
            yield from hit("tasks", task.name, group.name)
            for service in task.services:
                yield from hit("services", service.name, group.name, task.name)
            param = {"docker": ("images", "image"), "exec": ("commands", "command"),
                     "raw_exec": ("commands", "command"), "java": ("classes", "class")}.get(task.driver)  # fmt: skip
            if param is not None and isinstance(value := task.config.get(param[1]), str):
                yield from hit(param[0], value, group.name, task.name)


def _single_match(context: str, ns: str, obj: Any, text: str) -> Iterable[tuple[str, _Fuzzy]]:
    """What of one object holds the text (nomad's fuzzyMatchSingle)."""
    if context == "jobs":
        yield from _job_matches(obj, text)
        return
    name: str = obj.path if context == "vars" else obj.name
    scope: tuple[str, ...] = {
        "nodes": (obj.id,) if context == "nodes" else (),
        "node_pools": (name,),
        "namespaces": (),
        "allocs": (ns, obj.id) if context == "allocs" else (),
        "vars": (ns, name),
    }[context]
    if (i := _at(name, text)) >= 0:
        yield context, _Fuzzy(name, i, scope)


def check_text(text: str) -> None:
    """A fuzzy search's text is Nomad's search.min_term_length long at least; else a 400."""
    if len(text) < MIN_TERM_LENGTH:
        raise ApiError(
            400, f"fuzzy search query must be at least {MIN_TERM_LENGTH} characters, got {len(text)}"
        )


# The contexts fuzzy search matches by ID prefix, as Nomad does.
_BY_PREFIX = ("evals", "deployment", "scaling_policy", "volumes", "host_volumes")


def fuzzy_search(
    reads: Reads, caller: Caller, namespace: str, text: str, context: str, limit_query: int = LIMIT_QUERY
) -> dict[str, Any]:
    """Nomad's FuzzySearchResponse: Matches ({ID, Scope} per context, present where any) and
    Truncations."""
    if len(text) < MIN_TERM_LENGTH:
        raise ApiError(
            400, f"fuzzy search query must be at least {MIN_TERM_LENGTH} characters, got {len(text)}"
        )
    lowered = text.lower()
    found: dict[str, list[_Fuzzy]] = {}
    truncations: dict[str, bool] = {}

    def add(matches: Iterable[tuple[str, _Fuzzy]]) -> None:
        for ctx, match in matches:
            if len(found.setdefault(ctx, [])) < LIMIT_RESULTS:
                found[ctx].append(match)
            else:
                truncations[ctx] = True

    for ctx in contexts(context, caller, namespace):
        if ctx in _BY_PREFIX:
            objects, more = _first(reads, caller, ctx, namespace, text, TRUNCATE_LIMIT)
            if objects:
                found[ctx] = [_Fuzzy(object_id, 0, ()) for _, object_id, _ in objects]
            truncations[ctx] = more
            continue
        objects, more = _first(reads, caller, ctx, namespace, "", limit_query)
        truncations[ctx] = more
        for ns, _, obj in objects:
            add(_single_match(ctx, ns, obj, lowered))
    for matches in found.values():
        matches.sort(key=lambda m: (m.score, len(m.id), m.id))
    return {
        "Matches": {ctx: [m.to_api() for m in matches] for ctx, matches in found.items()},
        "Truncations": truncations,
    }
