"""The client's node secret (drover.client.identity): made once, kept with mode 0600, the same
after a restart; sent on the client endpoints alone."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from drover.client.identity import NodeSecretAuth, intro_token, load_or_create_secret


def test_a_secret_is_made_once_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "client" / "secret-id"
    secret = load_or_create_secret(path)
    assert uuid.UUID(secret).version == 4
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_or_create_secret(path) == secret  # a restart finds it
    assert load_or_create_secret(tmp_path / "other") != secret
    assert [p.name for p in path.parent.iterdir()] == ["secret-id"]  # no temporary file left


def test_the_secret_goes_on_every_request_and_the_intro_token_on_register() -> None:
    seen: dict[str, str | None] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen[request.url.path] = request.headers.get("X-Nomad-Token")
        return httpx.Response(200)

    for intro, registers_with in (("", "s3cr3t"), ("intro", "intro")):
        seen.clear()
        with httpx.Client(
            base_url="http://api",
            transport=httpx.MockTransport(handler),
            auth=NodeSecretAuth("s3cr3t", intro),
        ) as http:
            http.put("/v1/drover/node/register")
            http.put("/v1/drover/node/n1/heartbeat")
            http.get("/v1/node/n1/allocations")
            http.get("/v1/var/app/config", headers={"X-Nomad-Token": "chosen"})
        assert seen == {
            "/v1/drover/node/register": registers_with,
            "/v1/drover/node/n1/heartbeat": "s3cr3t",
            "/v1/node/n1/allocations": "s3cr3t",
            "/v1/var/app/config": "chosen",
        }


def test_the_intro_token_comes_from_the_environment() -> None:
    assert intro_token({}) == ""
    assert intro_token({"NOMAD_TOKEN": " t1 "}) == "t1"
    assert intro_token({"NOMAD_TOKEN": "t1", "DROVER_CLIENT_TOKEN": "t2"}) == "t2"
