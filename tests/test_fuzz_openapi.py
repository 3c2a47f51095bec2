"""A fuzzer over the API's own /openapi.json (Schemathesis), with ACLs on: every operation is
sent requests generated from its documented parameters and bodies, valid and not, with a
management token (every check passed, the handler reached) and with none. None may answer 5xx.
tests/test_bad_input.py sends chosen bad input to every route; this explores what no one chose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json

# Streams answer a good request by streaming until the client leaves; they are swept with bad
# input in tests/test_bad_input.py.
STREAMING = ("/v1/event/stream", "/v1/client/fs/logs/{alloc_id}", "/v1/client/fs/stream/{alloc_id}")
# Nomad's own 5xx by design: a server agent has no client to answer /v1/agent/servers (501).
DELIBERATE = {("/v1/agent/servers", 501)}


@pytest.fixture(scope="module")
def api(
    module_database_url: str, nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    settings = Settings(
        database_url=module_database_url,
        nats_url=nats_url,
        max_body_bytes=256 * 1024,
        acl_enabled=True,
        data_dir=str(tmp_path_factory.mktemp("fuzz")),
    )
    with TestClient(
        create_app(settings, EventStore(module_database_url)), raise_server_exceptions=False
    ) as c:
        r = c.post("/v1/acl/bootstrap")
        assert r.status_code == 200, r.text
        c.headers["X-Nomad-Token"] = r.json()["SecretID"]
        assert c.put("/v1/drover/node/register", json={"Node": node_json("n1")}).status_code == 200
        assert c.put("/v1/jobs", json=job_json("web", 1)).status_code == 200
        yield c


def _operations(api: TestClient) -> list[Any]:
    doc = api.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(doc)
    return [op for result in schema.get_all_operations() if (op := result.ok()).path not in STREAMING]


def test_no_generated_request_gets_a_5xx(api: TestClient) -> None:
    operations = _operations(api)
    assert len(operations) >= 80  # every router's routes are documented
    failures: list[str] = []
    for operation in operations:

        @hypothesis.given(case=operation.as_strategy())
        @hypothesis.settings(
            max_examples=12,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
            database=None,
        )
        def send(case: Any) -> None:
            for token in (None, api.headers["X-Nomad-Token"]):
                r = _send(api, case, token)
                if r.status_code >= 500 and (case.operation.path, r.status_code) not in DELIBERATE:
                    failures.append(f"{case.as_curl_command()}\n-> {r.status_code} {r.text[:300]}")

        send()
    assert failures == []


def _send(api: TestClient, case: Any, token: str | None) -> Any:
    """The case sent with `token` (None: none, the anonymous policy's)."""
    kwargs = case.as_transport_kwargs(base_url=str(api.base_url))
    headers = {k: v for k, v in (kwargs.get("headers") or {}).items() if k.lower() != "x-nomad-token"}
    headers["X-Nomad-Token"] = token or ""
    query = dict(kwargs.get("params") or {})
    # A blocking query waits as long as it is told: the fuzzer's waits are cut short.
    if "index" in query or "wait" in query:
        query["wait"] = "10ms"
    return api.request(
        kwargs["method"],
        kwargs["url"],
        params=query,
        headers=headers,
        json=kwargs.get("json"),
        content=kwargs.get("data"),
    )
