"""The event stream's ACL check (Nomad's Event.Stream, validateNsOp): each topic asked for needs
its own capability; `*` (every topic) a management token. A subscription to `namespace=*` is
checked in every namespace there is, each one must pass, and it is bound to those namespaces
(nomad PR #25089): an event of another is not sent to it.

A subscription holds on to its check: when an ACL token or policy changes, the stream checks it
again (its token read anew) before it sends on, and a token deleted or no longer granting
what the subscription asked for closes it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from drover.acl import ACL
from drover.api.aclresolve import AclResolver
from drover.model.streamevents import ALL
from drover.runtime.store.queries import Reads

# Topics whose events belong to a namespace, and what reading them takes there.
NAMESPACE_TOPICS = {
    "Job": "read-job",
    "Evaluation": "read-job",
    "Allocation": "read-job",
    "Deployment": "read-job",
    "Service": "read-job",
    "JobRestart": "read-job",
}


def topics_allowed(acl: ACL, topics: dict[str, set[str]], namespaces: list[str]) -> bool:
    """Whether `acl` may read every topic of `topics` in each of `namespaces`."""
    if acl.is_management():
        return True
    for topic in topics:
        capability = NAMESPACE_TOPICS.get(topic)
        if capability is not None:
            if not all(acl.allow_namespace_operation(ns, capability) for ns in namespaces):
                return False
        elif topic == "Node":
            if not acl.allow_node_read():
                return False
        else:  # `*`, and any topic not named here
            return False
    return True


async def check_subscription(
    resolver: AclResolver, reads: Reads, secret: str, acl: ACL, topics: dict[str, set[str]], namespace: str
) -> tuple[bool, frozenset[str] | None, Callable[[], Awaitable[bool]]]:
    """(whether the subscription may start, the namespaces it is bound to, None: as asked, and
    the check to run again when an ACL token or policy changes)."""
    bound: frozenset[str] | None = None
    if namespace == ALL and not acl.is_management() and any(t in NAMESPACE_TOPICS for t in topics):
        bound = frozenset(await asyncio.to_thread(reads.known_namespaces))
    namespaces = sorted(bound) if bound is not None else [namespace]

    async def again() -> bool:
        who = await resolver.resolve(secret, fresh=True)
        return who is not None and topics_allowed(who.acl, topics, namespaces)

    return topics_allowed(acl, topics, namespaces), bound, again
