"""The console's sign-in: the ACL token a browser signed in with, kept in a cookie (HttpOnly:
no script reads it; SameSite=Strict: no other site's request carries it; Path=/ui: /v1 never
sees it; Secure over HTTPS), never in localStorage as Nomad's UI keeps it.

The cookie holds the SecretID sealed under the keyring's active AES-GCM key, bound to this use
(drover.runtime.keyring.seal_text), never the SecretID itself: a cookie copied from a browser
profile, a proxy's log or a HAR file gives no one the secret, and opens only on a server of
this cluster, and only for the console. Its value is never logged."""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import AsyncIterator, Callable

from fastapi import Request, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from drover.api.aclguard import IDENTITY
from drover.api.aclresolve import AclResolver, Identity
from drover.api.ui import render
from drover.model.variables import EncryptedItems
from drover.runtime.keyring import Keyring, KeyringError

COOKIE = "drover_token"
# Routes that answer a browser whose sign-in went stale as anonymous (and forget it), rather
# than refuse it: where one signs in again.
OPEN_WHEN_STALE = frozenset({"/ui/signin", "/ui/signout", "/ui/theme"})
# What the sealed secret is bound to: a value sealed for another use does not open as one.
BOUND_TO = "console-session"


def seal(keyring: Keyring, secret: str) -> str:
    """The cookie's value for `secret`: `<key ID>.<nonce + ciphertext, URL-safe base64>`."""
    sealed = keyring.seal_text(BOUND_TO, secret)
    data = base64.urlsafe_b64encode(base64.b64decode(sealed.data)).decode().rstrip("=")
    return f"{sealed.key_id}.{data}"


def unseal(keyring: Keyring, value: str) -> str | None:
    """The secret a cookie's value holds, None if it is not one this cluster sealed."""
    key_id, dot, data = value.partition(".")
    if not dot or not key_id or not data:
        return None
    try:
        raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        return keyring.open_text(BOUND_TO, EncryptedItems(key_id=key_id, data=base64.b64encode(raw).decode()))
    except (KeyringError, binascii.Error, ValueError):
        return None


def remember(request: Request, response: Response, secret: str) -> None:
    """Sign the browser in with `secret` (a session cookie: gone when the browser closes)."""
    value = seal(request.app.state.keyring, secret)
    response.set_cookie(
        COOKIE, value, httponly=True, samesite="strict", path="/ui", secure=request.url.scheme == "https"
    )


def forget(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE, httponly=True, samesite="strict", path="/ui", secure=request.url.scheme == "https"
    )


def signed_in(app: ASGIApp, resolver: AclResolver, keyring: Keyring, path: str) -> ASGIApp:
    """`app` (a console route's endpoint) run with the cookie's token resolved into the scope
    (as drover.api.aclguard puts the API's), through the resolver's cache: a request costs an
    AES-GCM open, a hash and two dict lookups. No cookie is the anonymous token; a cookie whose
    token was deleted or expired (or that this cluster did not seal) is answered 403, saying so,
    and forgotten."""

    async def check(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        sealed = request.cookies.get(COOKIE, "")
        secret = unseal(keyring, sealed) if sealed else ""
        who = await resolver.resolve(secret) if secret is not None else None
        if who is not None and who.node:
            who = None  # a node's secret is no ACL token: the console takes none
        if who is None:
            if path not in OPEN_WHEN_STALE:
                scope[IDENTITY] = await resolver.resolve("")
                response = render.denied(request, signed_out=True)
                forget(request, response)
                await response(scope, receive, send)
                return
            scope[STALE] = True
            who = await resolver.resolve("")
        scope[IDENTITY] = who
        await app(scope, receive, send)

    return check


STALE = "drover.ui.stale_sign_in"


def guard_routes(routes: list[BaseRoute], resolver: AclResolver, keyring: Keyring) -> list[BaseRoute]:
    """The console's routes, each behind `signed_in` (copies: the routers' routes are shared by
    every app made in the process). The static files are not: they are the same for anyone."""
    out: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, Route):
            route = copy.copy(route)
            route.app = signed_in(route.app, resolver, keyring, route.path)
        out.append(route)
    return out


def while_signed_in(
    request: Request, body: AsyncIterator[bytes], still: Callable[[Identity], bool] = lambda who: True
) -> AsyncIterator[bytes]:
    """`body` (a long answer: a log followed) ended at its next write once the signed-in token
    is deleted or expired, or no longer `still` allowed what it asked (its policies changed):
    each write asks the resolver's cache again, which an ACL change empties."""
    if not request.app.state.settings.acl_enabled:
        return body
    resolver: AclResolver = request.app.state.acl
    sealed = request.cookies.get(COOKIE, "")
    secret = (unseal(request.app.state.keyring, sealed) if sealed else "") or ""

    async def checked() -> AsyncIterator[bytes]:
        try:
            async for chunk in body:
                who = await resolver.resolve(secret)
                if who is None or who.node or not still(who):
                    return
                yield chunk
        finally:
            # Its agent's connection closed now, not when the generator is collected.
            close = getattr(body, "aclose", None)
            if close is not None:
                await close()

    return checked()
