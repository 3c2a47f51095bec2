"""What the console lets a request do: the one question every control and action asks, so that
ACL tokens (Nomad's capabilities, e.g. `submit-job`, `alloc-lifecycle`, `node:write`) answer it
in one place once they exist. Today every request may do everything, as an API without ACLs
lets it."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from drover.api.aclguard import identity
from drover.api.errors import ApiError

# The capabilities the console's controls ask for, in Nomad's words.
READ_JOB = "read-job"
SUBMIT_JOB = "submit-job"
SCALE_JOB = "scale-job"
DISPATCH_JOB = "dispatch-job"
ALLOC_LIFECYCLE = "alloc-lifecycle"
NODE_WRITE = "node:write"
READ_LOGS = "read-logs"


def may(request: Request, capability: str, namespace: str = "default") -> bool:
    """Whether the request's token may do `capability` in `namespace`."""
    return True


def viewer(request: Request) -> str:
    """Who the request is, as far as what the console shows depends on it: two requests with the
    same viewer are shown the same controls (`may` answers them alike), so a fragment rendered
    for one serves the other (drover.api.ui.render.Loads). With ACLs, the token's accessor."""
    who = identity(request)
    if who is None:
        return ""
    return who.token.accessor_id if who.token is not None else "anonymous"


def require(capability: str) -> object:
    """A dependency refusing (403) a request whose token may not do `capability`."""

    async def check(request: Request) -> None:
        # A job's routes name it as `<id>@<namespace>`; the rest act on no namespace's object.
        _, _, namespace = str(request.path_params.get("ref", "")).rpartition("@")
        if not may(request, capability, namespace or "default"):
            raise ApiError(403, "Permission denied")

    return Depends(check)


MaySubmitJob = Annotated[None, require(SUBMIT_JOB)]
MayScaleJob = Annotated[None, require(SCALE_JOB)]
MayDispatchJob = Annotated[None, require(DISPATCH_JOB)]
MayAllocLifecycle = Annotated[None, require(ALLOC_LIFECYCLE)]
MayWriteNode = Annotated[None, require(NODE_WRITE)]
