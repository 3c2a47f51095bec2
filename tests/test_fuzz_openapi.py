"""A fuzzer over the API's own /openapi.json (Schemathesis): every operation is sent requests
generated from its documented parameters and bodies, valid and not. None may answer 5xx.
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


@pytest.fixture(scope="module")
def api(module_database_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=module_database_url, nats_url="nats://unused", max_body_bytes=256 * 1024)
    with TestClient(
        create_app(settings, EventStore(module_database_url)), raise_server_exceptions=False
    ) as c:
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
            r = _send(api, case)
            if r.status_code >= 500:
                failures.append(f"{case.as_curl_command()}\n-> {r.status_code} {r.text[:300]}")

        send()
    assert failures == []


def _send(api: TestClient, case: Any) -> Any:
    kwargs = case.as_transport_kwargs(base_url=str(api.base_url))
    query = dict(kwargs.get("params") or {})
    # A blocking query waits as long as it is told: the fuzzer's waits are cut short.
    if "index" in query or "wait" in query:
        query["wait"] = "10ms"
    return api.request(
        kwargs["method"],
        kwargs["url"],
        params=query,
        headers=kwargs.get("headers"),
        json=kwargs.get("json"),
        content=kwargs.get("data"),
    )
