"""/ui/signin and /ui/signout: a browser signs in with an ACL token's SecretID, checked by the
resolver the API checks its requests with (an unknown, expired or malformed one is refused,
saying so), and kept in a sealed HttpOnly cookie (drover.api.ui.session). Both posts carry the
session's CSRF token: another site can neither sign a browser out nor sign it in as its own
token (login CSRF)."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from drover.api.aclresolve import is_uuid
from drover.api.ui import csrf, session
from drover.api.ui.access import acl_enabled
from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields
from drover.api.ui.render import done, view

router = APIRouter()

NOT_FOUND = "ACL token not found: it does not exist, was deleted or has expired."


def _next(value: str) -> str:
    """Where to go once signed in: a console page, never another site."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not parts.path.startswith("/ui/") or "\\" in value:
        return "/ui/"
    return value


def _form(request: Request, next_: str, error: str = "", status: int = 200) -> Response:
    response = view(request, "signin.html", status, title="Sign in", acl=acl_enabled(request),
                    next=_next(next_), error=error)  # fmt: skip
    if request.scope.get(session.STALE):
        session.forget(request, response)
    return response


@router.get("/ui/signin", include_in_schema=False)
async def signin_page(request: Request, next: str = "/ui/") -> Response:
    return _form(request, next)


@router.post("/ui/signin", include_in_schema=False)
async def signin(request: Request, _c: CsrfChecked) -> Response:
    form = await fields(request)
    secret, next_ = form.get("secret_id", "").strip(), form.get("next", "/ui/")
    if not acl_enabled(request):
        return _form(
            request, next_, "ACLs are not enabled on this cluster: there is nothing to sign in to.", 400
        )
    if not secret:
        return _form(request, next_, "Enter the Secret ID of an ACL token.", 400)
    if not is_uuid(secret):
        return _form(request, next_, "That is not a Secret ID: one is a UUID.", 400)
    who = await request.app.state.acl.resolve(secret)
    if who is None or who.node or who.token is None:
        return _form(request, next_, NOT_FOUND, 403)
    response = RedirectResponse(_next(next_), status_code=303)
    session.remember(request, response, secret)
    # A new CSRF token with the new sign-in: one planted before it is worth nothing after.
    csrf.set_cookie(request, response, secrets.token_urlsafe(32))
    return response


@router.post("/ui/signout", include_in_schema=False)
async def signout(request: Request, _c: CsrfChecked) -> Response:
    response = done(request, "/ui/signin", "Signed out")
    session.forget(request, response)
    return response
