"""What the console lets a request do: the one question every control and action asks. With
ACLs on, the answer is the signed-in token's (drover.api.ui.session resolves it for every
console request, no cookie being the anonymous token, as the API takes no token), in Nomad's
capabilities: a namespace's (`read-job`, `submit-job`, `scale-job`, `alloc-lifecycle`, ...)
or `node:read` / `node:write`. With ACLs off every request may do everything, as the API lets
it."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Depends, Request

from drover.acl import ACL
from drover.api.aclguard import IDENTITY
from drover.api.aclresolve import Identity
from drover.api.errors import ApiError

# The capabilities the console's controls ask for, in Nomad's words.
READ_JOB = "read-job"
LIST_JOBS = "list-jobs"
SUBMIT_JOB = "submit-job"
SCALE_JOB = "scale-job"
DISPATCH_JOB = "dispatch-job"
ALLOC_LIFECYCLE = "alloc-lifecycle"
NODE_READ = "node:read"
NODE_WRITE = "node:write"
READ_LOGS = "read-logs"
# A capability granted also by another, as the API's table grants its route (drover.api.access):
# a job is scaled with `scale-job` or `submit-job`.
ALTERNATIVES = {SCALE_JOB: (SCALE_JOB, SUBMIT_JOB)}


def acl_enabled(request: Request) -> bool:
    return bool(request.app.state.settings.acl_enabled)


def identity(request: Request) -> Identity | None:
    """The signed-in token (None: ACLs are off, or the request was not resolved)."""
    found: Identity | None = request.scope.get(IDENTITY)
    return found


def allows(acl: ACL, capability: str, namespace: str) -> bool:
    """Whether `acl` grants `capability` (a namespace's, or `node:read`/`node:write`)."""
    if acl.management:
        return True
    if capability == NODE_READ:
        return acl.allow_node_read()
    if capability == NODE_WRITE:
        return acl.allow_node_write()
    return acl.allow_namespace_any_of(namespace, ALTERNATIVES.get(capability, (capability,)))


def may(request: Request, capability: str, namespace: str = "default") -> bool:
    """Whether the request's token may do `capability` in `namespace`."""
    if not acl_enabled(request):
        return True
    who = identity(request)
    # Every console route is behind the sign-in check with ACLs on: none resolved is none allowed.
    return who is not None and allows(who.acl, capability, namespace)


def readable(request: Request, namespaces: list[str], capability: str = READ_JOB) -> tuple[str, ...] | None:
    """Of `namespaces`, those the token may `capability` in; None: every namespace (ACLs off, or
    a management token), so that a list asks for no namespace at all."""
    if not acl_enabled(request):
        return None
    who = identity(request)
    if who is not None and who.acl.management:
        return None
    return tuple(ns for ns in namespaces if may(request, capability, ns))


async def within(request: Request, capability: str = READ_JOB) -> str | tuple[str, ...]:
    """What a list across namespaces asks for: `*`, or the namespaces the token may
    `capability` in (the catalogue read only when it must be)."""
    if not acl_enabled(request) or ((who := identity(request)) is not None and who.acl.management):
        return "*"
    names = await asyncio.to_thread(request.app.state.reads.namespaces)
    return readable(request, [n.name for n in names], capability) or ()


async def reads_everything(request: Request) -> bool:
    """Whether the token may read the jobs of every namespace there is (what a page drawing
    every namespace's allocs together, shared by every tab, asks)."""
    if await within(request) == "*":
        return True
    names = await asyncio.to_thread(request.app.state.reads.namespaces)
    return all(may(request, READ_JOB, n.name) for n in names)


async def namespace_of(request: Request, kind: str, object_id: str) -> str | None:
    """The namespace of an alloc, eval or deployment (None: there is none of that ID)."""
    found: str | None = await request.app.state.acl.namespace_of(kind, object_id)
    return found


async def may_read(request: Request, kind: str, object_id: str) -> bool:
    """Whether the token may read the alloc (eval, deployment) `object_id`: an unknown one it
    may (the page then says it is not there)."""
    if not acl_enabled(request):
        return True
    ns = await namespace_of(request, kind, object_id)
    return ns is None or may(request, READ_JOB, ns)


def who(request: Request) -> dict[str, Any] | None:
    """Who is signed in, for the page's header (None: ACLs are off, there is no one to be)."""
    if not acl_enabled(request):
        return None
    found = identity(request)
    token = found.token if found is not None else None
    if token is None:
        return {"name": "anonymous", "anonymous": True}
    return {
        "name": token.name or token.accessor_id[:8],
        "anonymous": False,
        "management": token.is_management(),
    }


def token_key(request: Request) -> str:
    """What a load that depends on the token's whole ACL (not only on its namespaces) is shared
    by: every request with ACLs off, every management token's, else each token's own."""
    return key_of(identity(request), acl_enabled(request))


def key_of(found: Identity | None, enabled: bool) -> str:
    """`token_key` of the token `found` (the event stream's, read again at ACL changes)."""
    if not enabled:
        return ""
    if found is None or found.token is None:
        return "anonymous"
    return "management" if found.acl.management else found.token.accessor_id


def viewer(request: Request) -> str:
    """Who the request is, as far as what the console shows depends on it: two requests with the
    same viewer are shown the same controls and the same namespaces, so a fragment rendered for
    one serves the other (drover.api.ui.render.Loads)."""
    return token_key(request)


def require(capability: str, of: str = "ref") -> Any:
    """A dependency refusing (403) a request whose token may not do `capability` in the
    namespace of what it acts on: the job its path names (`of="ref"`, `<id>@<namespace>`), the
    alloc or deployment its path's ID is (`of="alloc"`, `"deployment"`), or none (`of=""`)."""

    async def check(request: Request) -> None:
        namespace = "default"
        if of == "ref":
            _, _, namespace = str(request.path_params.get("ref", "")).rpartition("@")
        elif of:
            object_id = next(iter(request.path_params.values()), "")
            namespace = await namespace_of(request, of, str(object_id)) or "default"
        if not may(request, capability, namespace or "default"):
            raise ApiError(403, "Permission denied")

    return Depends(check)


MaySubmitJob = Annotated[None, require(SUBMIT_JOB)]
MayScaleJob = Annotated[None, require(SCALE_JOB)]
MayDispatchJob = Annotated[None, require(DISPATCH_JOB)]
MayDeploy = Annotated[None, require(SUBMIT_JOB, of="deployment")]
MayAllocLifecycle = Annotated[None, require(ALLOC_LIFECYCLE, of="alloc")]
# A job's restart (its allocs', batch by batch): `alloc-lifecycle` in the job's namespace.
MayRestartJob = Annotated[None, require(ALLOC_LIFECYCLE)]
MayWriteNode = Annotated[None, require(NODE_WRITE, of="")]
