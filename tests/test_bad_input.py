"""Every route against input no client should send: NUL characters in paths, queries and JSON
strings, lone surrogates, NaN, numbers beyond 64 bits, bodies nested thousands deep, bodies
that are not objects. None may answer 5xx, and none may write to the log."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from drover.api.app import ROUTERS, create_app
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json

# Path parameters: a real one, an unknown one, and ones no stored text may hold.
PATH_VALUES = ("web", "n1", "nope", "a%00b", "%ED%A0%80", "web/dispatch-1-0a1b2c3d")
# Query strings every route is asked with; and, for reads, bad paging and blocking parameters
# (every request of the sweep is bad: a valid one might write).
QUERIES = ("prefix=%00", "namespace=a%00", "next_token=%00", "node_prefix=%00&index=1&wait=10ms")
READ_QUERIES = (
    "index=1&wait=10ms&per_page=99999999999999999999999999",
    "index=99999999999999999999999999&wait=10ms",
    "index=1&wait=forever",
)

# A stream answers a good query by streaming until the client leaves: it is asked bad ones only.
STREAMS = {
    "/v1/event/stream": (
        "prefix=%00",
        "namespace=a%00",
        "index=-1",
        "index=99999999999999999999999999",
        "topic=a:b:c",
        "topic=Nope",
        "topic=Job:&index=x",
        "topic=%00",
    )
}


def _deep(levels: int) -> bytes:
    return b'{"Job": {"ID": "deep", "Meta": ' + b"[" * levels + b"]" * levels + b"}}"


def _job_with(**fields: object) -> bytes:
    body = job_json("web", 1)
    body["Job"].update(fields)
    return json.dumps(body).encode()


BODIES = (
    b"",
    b"{not json",
    b"[1]",
    b'"x"',
    b"null",
    b"1",
    _deep(5000),
    _deep(100),
    _job_with(Meta={"owner": "a\x00b"}),
    _job_with(Meta={"a\x00": "b"}),
    _job_with(Name="\ud800"),
    _job_with(Priority=10**30),
    b'{"Job": {"ID": "web", "Priority": NaN}}',
    b'{"Job": {"ID": "web", "Priority": 1e400}}',
    json.dumps({"Node": node_json("n\x001")}).encode(),
    json.dumps({"NodeIDs": ["n1\x00"], "Updates": [{"ID": "\x00", "ClientStatus": "running"}]}).encode(),
    json.dumps({"Count": 2**64, "Target": {"Group": "web"}, "Eligibility": "\x00", "Pause": "\x00"}).encode(),
    json.dumps({"TaskName": "\x00", "Groups": ["\x00"], "DrainSpec": {"Deadline": 10**40}}).encode(),
)


# 5xx answers that are the answer, as Nomad gives it: the health check of an API without NATS
# to reach, and a client agent's request to a server-only agent.
ANSWERED_5XX = {("/v1/agent/health", 500): "NATS unreachable", ("/v1/agent/servers", 501): "Invalid method"}


@pytest.fixture
def client(database_url: str, store: EventStore) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, nats_url="nats://unused", max_body_bytes=256 * 1024)
    with TestClient(create_app(settings, EventStore(database_url)), raise_server_exceptions=False) as c:
        assert c.put("/v1/drover/node/register", json={"Node": node_json("n1")}).status_code == 200
        assert c.put("/v1/jobs", json=job_json("web", 1)).status_code == 200
        yield c


def _routes() -> list[tuple[str, str, bytes | None]]:
    """(method, path, what body it takes: None if none, b"" if one is required, b"{}" if one
    is optional - its defaults may make a valid request) of every route of every router."""
    out = []
    for module in ROUTERS:
        for route in module.router.routes:
            assert isinstance(route, APIRoute)
            field = route.body_field
            body = None if field is None else b"" if field.field_info.is_required() else b"{}"
            out.extend((method, route.path, body) for method in sorted(route.methods))
    return out


def _paths(template: str) -> list[str]:
    # A parameter may name its convertor: a job's ID is `{job_id:path}` (it may hold slashes).
    params = re.findall(r"{\w+(?::\w+)?}", template)
    paths = []
    for values in itertools.product(PATH_VALUES, repeat=len(params)):
        path = template
        for param, value in zip(params, values, strict=True):
            path = path.replace(param, value)
        paths.append(path)
    return paths


def test_every_route_refuses_bad_input_without_a_5xx_or_a_write(
    client: TestClient, store: EventStore
) -> None:
    routes = _routes()
    assert len(routes) >= 40  # every resource's router is included
    before = store.last_position()
    failures = []
    for method, template, takes in routes:
        for path in _paths(template):
            queries = STREAMS.get(template) or QUERIES + (READ_QUERIES if method == "GET" else ())
            requests = [(f"{path}?{q}", None) for q in queries]
            if takes is not None:
                # No body (empty, or null) is bad only where one is required.
                requests += [(path, body) for body in BODIES if takes == b"" or body not in (b"", b"null")]
            for url, body in requests:
                r = client.request(method, url, content=body)
                if r.status_code >= 500 and ANSWERED_5XX.get((template, r.status_code), "\0") not in r.text:
                    failures.append(f"{method} {url} {(body or b'')[:60]!r}: {r.status_code} {r.text[:200]}")
    assert failures == []
    assert store.last_position() == before


@pytest.mark.parametrize(
    ("method", "url", "body", "needle"),
    [
        ("GET", "/v1/evaluations?prefix=%00", None, "NUL"),
        ("GET", "/v1/jobs?namespace=a%00", None, "NUL"),
        ("GET", "/v1/job/x/versions?namespace=%00", None, "NUL"),
        ("POST", "/v1/job/x/evaluate?namespace=%00", None, "NUL"),
        ("GET", "/v1/nodes?prefix=%00", None, "NUL"),
        ("PUT", "/v1/jobs", _job_with(Meta={"owner": "a\x00b"}), "Job.Meta.owner holds a NUL character"),
        ("PUT", "/v1/jobs", _deep(5000), "nests deeper than 64 levels"),
        ("PUT", "/v1/jobs", _deep(100), "nests deeper than 64 levels"),
        ("PUT", "/v1/jobs", _job_with(Name="\ud800"), "Job.Name holds a lone surrogate"),
        ("PUT", "/v1/jobs", _job_with(Priority=10**30), "outside the range of a 64-bit integer"),
        ("PUT", "/v1/jobs", b'{"Job": {"ID": "web", "Priority": NaN}}', "NaN is not a JSON value"),
        ("GET", "/v1/jobs?index=99999999999999999999999999", None, "Invalid index"),
        ("PUT", "/v1/jobs", b"[1]", "Request must be a JSON object"),
        ("PUT", "/v1/jobs", b"", "Request must be a JSON object"),
        ("DELETE", "/v1/job/web?purge=maybe", None, "query parameter purge must be a boolean"),
        ("GET", "/v1/event/stream?topic=a:b:c", None, "Invalid topic 'a:b:c': expected Topic or Topic:Key"),
        ("GET", "/v1/event/stream?index=-1", None, "Invalid index: a non-negative integer"),
        ("GET", "/v1/event/stream?topic=Jobs", None, "Unknown topic 'Jobs': one of Job, Evaluation"),
        ("GET", "/v1/event/stream?index=-1&topic=Job:a:b&topic=x", None, "Invalid index"),
    ],
)
def test_each_refusal_says_what_is_wrong(
    client: TestClient, store: EventStore, method: str, url: str, body: bytes | None, needle: str
) -> None:
    before = store.last_position()
    r = client.request(method, url, content=body)
    assert r.status_code == 400, (r.status_code, r.text)
    assert needle in r.text, r.text
    assert store.last_position() == before
