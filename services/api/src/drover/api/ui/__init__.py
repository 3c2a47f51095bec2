"""The web console at /ui/: pages rendered on the server (Jinja2) from the same reads and
commands as /v1, kept live by one server-sent-events connection per tab (`live`), down which
the fragments an event touches are pushed, rendered once for every tab (`push`). One router per
page family (`routes`). With ACLs on, every page, fragment, action and event stream answers as
the signed-in token (`session`, `access`)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from drover.api.aclresolve import AclResolver
from drover.api.ui import live, session
from drover.api.ui.routes import (
    allocations,
    evaluations,
    jobrestart,
    jobs,
    launches,
    logs,
    nodes,
    overview,
    run,
    search,
    settings,
    signin,
    stream,
    topology,
)
from drover.runtime.keyring import Keyring

# Before jobs: /ui/jobs/<ref>/logs, /edit and /dispatch are not a job's page (whose <ref> is a path).
ROUTERS = (live, overview, logs, run, launches, jobs, jobrestart, allocations, nodes, topology, evaluations,
           search, stream, settings, signin)  # fmt: skip
STATIC = Path(__file__).parent / "static"


def routes(resolver: AclResolver | None = None, keyring: Keyring | None = None) -> list[BaseRoute]:
    """The console's routes, to be added to the app itself (as the API's are); with ACLs on
    (a `resolver` and the `keyring` sealing the sign-in cookie), each behind the sign-in."""
    out: list[BaseRoute] = [r for module in ROUTERS for r in module.router.routes]
    if resolver is not None and keyring is not None:
        out = session.guard_routes(out, resolver, keyring)
    out.append(Mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static"))
    return out


def install(app: FastAPI) -> None:
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    app.add_api_route("/ui", home, include_in_schema=False)
