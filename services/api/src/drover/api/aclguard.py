"""The ACL check of every request, from the route table (drover.api.access): each route's
endpoint is wrapped (when ACLs are enabled) by one check that resolves the request's token
(drover.api.aclresolve), finds the namespace the entry names, and lets the request through
only if one of the entry's alternatives is granted; else 403 `Permission denied`, before the
handler runs, so a refused request writes nothing. The identity goes on in the scope for the
handlers that show a token only what it may see (`identity`).

Wrapping the routes' own endpoints rather than adding a dependency keeps a request cheap: no
dependency resolution, and with ACLs off no wrapper at all."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import PlainTextResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from drover.api.access import ROUTES, Capability, Need
from drover.api.aclresolve import AclResolver, Identity, token_from
from drover.api.errors import ApiError
from drover.api.jsondecode import _DECODED as DECODED
from drover.api.jsondecode import decode

DENIED = "Permission denied"
IDENTITY = "drover.identity"


def identity(request: Request) -> Identity | None:
    """The request's resolved token (None: ACLs are off, everything is allowed)."""
    found: Identity | None = request.scope.get(IDENTITY)
    return found


def is_management(request: Request) -> bool:
    """Whether the request holds a management token. With ACLs off none does: Nomad treats
    every request as management then, so that its RejectJobRegistration refuses nothing
    without ACLs; here the switch refuses everyone's registrations (docs/operator.md)."""
    who = identity(request)
    return who is not None and who.acl.management


async def _denied(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse(DENIED, status_code=403)(scope, receive, send)


def _query(scope: Scope) -> dict[str, list[str]]:
    raw: bytes = scope.get("query_string", b"")
    return parse_qs(raw.decode("latin-1")) if raw else {}


def _query_namespace(query: dict[str, list[str]]) -> str:
    return (query.get("namespace") or [""])[0] or "default"


class _Check:
    """One request's check against its route's entry."""

    def __init__(
        self, resolver: AclResolver, limit: int, scope: Scope, receive: Receive, who: Identity
    ) -> None:
        self.resolver = resolver
        self.limit = limit
        self.scope = scope
        self.receive = receive
        self.who = who
        self.query = _query(scope)
        self._namespace: str | None = None

    async def namespace(self, source: str) -> str:
        if self._namespace is None:
            self._namespace = await self._find_namespace(source)
        return self._namespace

    async def _find_namespace(self, source: str) -> str:
        asked = _query_namespace(self.query)
        if source == "path":
            # The namespace the path names (`/v1/namespace/:name`).
            return str(self.scope.get("path_params", {}).get("name", "")) or asked
        if source in ("alloc", "eval", "deployment"):
            object_id = next(iter(self.scope.get("path_params", {}).values()), "")
            return await self.resolver.namespace_of(source, object_id) or asked
        if source == "body":
            # Where the handler puts the job (drover.api.routes.jobs.in_namespace): ?namespace=
            # first, then the request's own Namespace, then the job's, else "default".
            body = await self._body()
            job = body.get("Job")
            for named in (
                (self.query.get("namespace") or [""])[0],
                body.get("Namespace"),
                job.get("Namespace") if isinstance(job, dict) else None,
            ):
                if isinstance(named, str) and named:
                    return named
            return "default"
        if source == "var-body" and not (self.query.get("namespace") or [""])[0]:
            named = (await self._body()).get("Namespace")
            return named if isinstance(named, str) and named else asked
        return asked

    async def _body(self) -> dict[str, Any]:
        """The body's JSON (an object, else {}), decoded once: the handler takes it from the scope,
        and reads the same bytes again through the replayed `receive`."""
        chunks = []
        while True:
            message = await self.receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        if len(raw) > self.limit:
            raise ApiError(413, "Request body too large")
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await self.receive()

        self.receive = replay
        try:
            data = decode(raw) if raw else {}
        except ApiError:
            return {}  # the handler refuses it (400), with nothing written
        self.scope[DECODED] = data
        return data if isinstance(data, dict) else {}

    async def allows(self, need: Need) -> bool:
        if self.who.acl.management:
            return True
        if need.purge is not None and (self.query.get("purge") or [""])[0].lower() in ("true", "1"):
            need = need.purge
        for alternative in need.any_of:
            for c in alternative:
                if not await self._grants(c, need):
                    break
            else:
                return True
        return False

    async def _grants(self, capability: Capability, need: Need) -> bool:
        scope, op = capability
        acl = self.who.acl
        if scope == "namespace":
            ns = await self.namespace(need.namespace)
            # `any`: anything at all granted there (Nomad's AllowNamespace: reading a namespace).
            return acl.allow_namespace(ns) if op == "any" else acl.allow_namespace_operation(ns, op)
        if scope == "variables":
            ns = await self.namespace(need.namespace)
            if op == "list":
                # A node's client lists what its templates watch in any namespace (Nomad's
                # search finds a namespace's rules by prefix, which `*` is not).
                return acl.allow_variable_search(ns) or self.who.node
            return acl.allow_variable_operation(ns, self.scope.get("path_params", {}).get("path", ""), op)
        if scope in ("node", "agent", "quota") or (scope == "plugin" and op in ("read", "list")):
            return bool(getattr(acl, f"allow_{scope}_{op}")())
        if scope == "node_pool":
            params = self.scope.get("path_params", {})
            return acl.allow_node_pool_operation(params.get("node_pool", params.get("name", "")), op)
        if scope == "operator":
            if op in ("read", "write"):
                return bool(getattr(acl, f"allow_operator_{op}")())
            return acl.allow_operator_operation(op)
        if scope == "acl":
            params = self.scope.get("path_params", {})
            if op == "policy":
                return self.who.holds_policy(params.get("name", ""))
            token = self.who.token
            return token is not None and token.accessor_id == params.get("accessor_id")
        # `token`: any identity; `management` was checked first; a scope unknown grants nothing.
        return scope == "token"


def _filtered(body: bytes, who: Identity, need: Need) -> bytes:
    """A list answer without the items the token may not see: by their variable path's list
    rule, or by their namespace, where the item's namespace must grant what the route's entry
    asks of a namespace (`filter="need"`) or the capability named."""
    items = json.loads(body)
    if not isinstance(items, list):
        return body
    acl = who.acl
    if need.filter in ("variables", "namespaces", "node_pools"):
        alternatives: tuple[tuple[str, ...], ...] = ()
    elif need.filter == "need":
        alternatives = tuple(tuple(op for scope, op in alt if scope == "namespace") for alt in need.any_of)
    else:
        alternatives = ((need.filter,),)

    def visible(item: Any) -> bool:
        if need.filter == "namespaces":
            # The namespace catalogue: those the token is granted anything in (AllowNamespace).
            return not isinstance(item, dict) or acl.allow_namespace(str(item.get("Name", "")))
        if need.filter == "node_pools":
            name = str(item.get("Name", "")) if isinstance(item, dict) else ""
            return acl.allow_node_pool_operation(name, "read")
        if not isinstance(item, dict) or not isinstance(item.get("Namespace"), str):
            return True
        ns = item["Namespace"]
        if need.filter == "variables":
            return acl.allow_variable_operation(ns, str(item.get("Path", "")), "list")
        return any(all(acl.allow_namespace_operation(ns, op) for op in alt) for alt in alternatives)

    kept = [i for i in items if visible(i)]
    return body if len(kept) == len(items) else json.dumps(kept).encode()


def _filtering_send(send: Send, who: Identity, need: Need) -> Send:
    """`send` passing a JSON list answer on filtered (held until its last part)."""
    start: Message | None = None
    parts: list[bytes] = []

    async def filtering(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(parts)
        if start["status"] == 200 and body[:1] == b"[":
            body = _filtered(body, who, need)
        headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return filtering


def guarded(app: ASGIApp, need: Need, resolver: AclResolver, limit: int) -> ASGIApp:
    """`app` (a route's endpoint) behind the check of `need`."""
    if "none" in need.scopes:
        return app

    async def check(scope: Scope, receive: Receive, send: Send) -> None:
        who = await resolver.resolve(token_from(scope["headers"]))
        if who is None:
            await _denied(scope, receive, send)
            return
        scope[IDENTITY] = who
        if who.acl.management:
            await app(scope, receive, send)
            return
        c = _Check(resolver, limit, scope, receive, who)
        if not await c.allows(need):
            await _denied(scope, receive, send)
            return
        if need.filter:
            send = _filtering_send(send, who, need)
        await app(scope, c.receive, send)

    return check


def guard_routes(routes: list[BaseRoute], resolver: AclResolver, limit: int) -> list[BaseRoute]:
    """Every route behind its entry of the table (KeyError for a route it does not name): copies,
    as the routers' routes are shared by every app made in the process."""
    out: list[BaseRoute] = []
    for route in routes:
        if not isinstance(route, Route):
            out.append(route)
            continue
        methods = sorted(route.methods or ())
        needs = {ROUTES[(method, route.path)] for method in methods}
        if len(needs) > 1:
            raise ValueError(f"{route.path}: one route, two checks ({', '.join(methods)})")
        guarded_route = copy.copy(route)
        guarded_route.app = guarded(route.app, needs.pop(), resolver, limit)
        out.append(guarded_route)
    return out
