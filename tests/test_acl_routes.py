"""The ACL route table names every route of the API, and nothing else: a route added without
its entry fails here (and the app refuses to start with ACLs on), as does an entry left behind
by a route that is gone."""

from __future__ import annotations

import pytest
from starlette.routing import Route

from drover.api.access import ROUTES, Need
from drover.api.app import create_app
from drover.runtime.settings import Settings


def _routes(acl_enabled: bool) -> list[Route]:
    settings = Settings(database_url="postgresql://nobody@127.0.0.1:1/none", nats_url="nats://unused",
                        acl_enabled=acl_enabled)  # fmt: skip
    return [r for r in create_app(settings).router.routes if isinstance(r, Route)]


def _served() -> set[tuple[str, str]]:
    """Every route of the API: the web console's (/ui) are behind its sign-in instead
    (drover.api.ui.session), each page checking what the signed-in token may see."""
    return {
        (method, route.path)
        for route in _routes(False)
        if not route.path.startswith("/ui")
        for method in route.methods or ()
    }


def test_every_route_of_the_app_has_an_entry() -> None:
    missing = sorted(_served() - ROUTES.keys())
    assert missing == [], f"routes without an ACL entry in drover.api.access.ROUTES: {missing}"


def test_every_entry_names_a_route_of_the_app() -> None:
    stale = sorted(ROUTES.keys() - _served())
    assert stale == [], f"ACL entries for routes the app does not serve: {stale}"


def test_an_app_with_acls_on_puts_every_route_behind_its_entry() -> None:
    every = _routes(True)
    console = [r for r in every if r.path.startswith("/ui/")]
    # The console's: behind its sign-in, which resolves the cookie's token (not the table's check).
    assert console and all(r.app.__qualname__.startswith("signed_in") for r in console)
    assert {"/ui/", "/ui/jobs", "/ui/events", "/ui/signin", "/ui/signout"} <= {r.path for r in console}
    routes = [r for r in every if not r.path.startswith("/ui")]
    open_ = [r for r in routes if "none" in ROUTES[(sorted(r.methods or ())[0], r.path)].scopes]
    # A guarded endpoint is the check's closure; an open one is the route's own.
    assert all(r.app.__qualname__.startswith("guarded") for r in routes if r not in open_)
    assert all(not r.app.__qualname__.startswith("guarded") for r in open_)
    assert {r.path for r in open_} >= {"/v1/status/leader", "/v1/acl/bootstrap", "/v1/metrics"}


@pytest.mark.parametrize(
    ("route", "need"), sorted(ROUTES.items()), ids=[f"{m} {p}" for m, p in sorted(ROUTES)]
)
def test_every_entry_is_a_check_the_guard_knows(route: tuple[str, str], need: Need) -> None:
    known = {"none", "token", "management", "namespace", "variables", "node", "agent", "operator", "quota",
             "plugin", "node_pool", "acl"}  # fmt: skip
    assert need.scopes <= known
    assert need.namespace in ("query", "body", "var-body", "path", "alloc", "eval", "deployment")
    assert need.filter in ("", "need", "variables", "namespaces", "node_pools", "read-job")
    # A write taken as PUT or POST has one check for both.
    method, path = route
    if method in ("PUT", "POST"):
        other = ROUTES.get(("POST" if method == "PUT" else "PUT", path))
        assert other is None or other == need
