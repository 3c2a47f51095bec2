"""Cross-site request forgery: every console action carries the session's token, kept in a
SameSite=Strict, HttpOnly cookie and repeated in the form (`csrf_token`) or, for htmx's
requests, the `X-CSRF-Token` header; `CsrfChecked` refuses (403) a post whose two differ, or
whose Origin is another site's."""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request, Response

from drover.api.errors import ApiError
from drover.api.ui.forms import fields

COOKIE = "drover_csrf"
FIELD = "csrf_token"
HEADER = "x-csrf-token"


def token(request: Request) -> str:
    """The session's token: its cookie's, else a new one (`remember` sets it on the answer)."""
    current = request.cookies.get(COOKIE, "")
    if len(current) == 43:
        return current
    fresh: str = request.state.__dict__.setdefault("csrf_new", secrets.token_urlsafe(32))
    return fresh


def remember(request: Request, response: Response) -> None:
    """Set the cookie of a token made for this request."""
    fresh = request.state.__dict__.get("csrf_new")
    if fresh:
        set_cookie(request, response, fresh)


def set_cookie(request: Request, response: Response, value: str) -> None:
    response.set_cookie(
        COOKIE, value, httponly=True, samesite="strict", path="/ui", secure=request.url.scheme == "https"
    )


async def _check(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise ApiError(403, "CSRF check failed: the request comes from another site")
    expected = request.cookies.get(COOKIE, "")
    given = request.headers.get(HEADER, "")
    if not given:
        given = (await fields(request)).get(FIELD, "")
    if not expected or not hmac.compare_digest(expected.encode(), given.encode()):
        raise ApiError(403, "CSRF check failed: reload the page and try again")


CsrfChecked = Annotated[None, Depends(_check)]
