"""The console with ACLs on, over HTML in-process against a real PostgreSQL (no browser): a
browser signs in with an ACL token's SecretID (a bad one refused, saying why; the post needs
the session's CSRF token), kept in a sealed HttpOnly, SameSite=Strict cookie; each page shows
what the token may read (namespaces it may not are hidden, their objects' pages refused) and
only the controls it holds the capability for, and a forged action with a valid CSRF token is
refused and writes nothing; no cookie is the anonymous policy; a deleted token's sign-in is
refused; the tab's event stream names only the events the token may read, and ends when its
token goes."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.acl import compile_acl, parse
from drover.api.aclresolve import Identity
from drover.api.app import create_app
from drover.api.streamhub import Frame, StreamHub, Subscription, frame
from drover.api.ui import live, session
from drover.runtime.keyring import Keyring
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

from .cluster import job_json, node_json
from .test_ui_events import _hub, _publish
from .test_ui_pages import _place

READ_DEFAULT = 'namespace "default" { policy = "read" }\nnode { policy = "read" }'
# The controls a write token has on the pages below, and the read-only one must not.
WRITE_CONTROLS = ("/ui/job/stop/", "/ui/job/scale/", "/ui/allocation/stop/", "/ui/allocation/restart/",
                  "/ui/node/drain/", "/ui/node/eligibility/")  # fmt: skip


def _settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, nats_url="nats://unused", data_dir=str(tmp_path),
                    keyring=str(tmp_path / "keyring.json"), acl_enabled=True,
                    acl_token_min_expiration_ttl=0.0, max_body_bytes=64 * 1024)  # fmt: skip


@pytest.fixture
def client(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_settings(database_url, tmp_path), EventStore(database_url))) as c:
        yield c


@pytest.fixture
def root(client: TestClient) -> dict[str, str]:
    r = client.post("/v1/acl/bootstrap")
    assert r.status_code == 200, r.text
    return {"X-Nomad-Token": r.json()["SecretID"]}


def _token(client: TestClient, root: dict[str, str], rules: str, name: str, **kw: Any) -> dict[str, Any]:
    r = client.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=root)
    assert r.status_code == 200, r.text
    r = client.post(
        "/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name], **kw}, headers=root
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _csrf(client: TestClient, page: str = "/ui/signin") -> str:
    r = client.get(page)
    m = re.search(r'name="csrf_token" value="([^"]+)"', r.text)
    assert m, (r.status_code, r.text[:500])
    return m.group(1)


def _sign_in(client: TestClient, secret: str, next_: str = "/ui/") -> Any:
    form = {"csrf_token": _csrf(client), "secret_id": secret, "next": next_}
    return client.post("/ui/signin", data=form, follow_redirects=False)


def _cluster(client: TestClient, root: dict[str, str], store: EventStore) -> dict[str, str]:
    """A node, `web` placed in `default` and `hidden` placed in namespace `secret`: their
    allocs' IDs."""
    assert (
        client.put("/v1/drover/node/register", json={"Node": node_json("node-a")}, headers=root).status_code
        == 200
    )
    assert client.put("/v1/namespace/secret", json={"Name": "secret"}, headers=root).status_code == 200
    for job_id, ns in (("web", "default"), ("hidden", "secret")):
        body = job_json(job_id, 1, rolling=False)
        body["Job"]["Namespace"] = ns
        r = client.put("/v1/jobs", json=body, headers=root)
        assert r.status_code == 200, r.text
        _place(store, r.json()["EvalID"])
    allocs = client.get("/v1/allocations", params={"namespace": "*"}, headers=root).json()
    return {a["JobID"]: a["ID"] for a in allocs}


def test_a_bad_token_is_refused_and_signs_no_one_in(client: TestClient, root: dict[str, str]) -> None:
    page = client.get("/ui/signin")
    assert page.status_code == 200 and 'name="secret_id"' in page.text and 'type="password"' in page.text
    for secret, status, says in [
        (str(uuid.uuid4()), 403, "ACL token not found"),
        ("not-a-uuid", 400, "not a Secret ID"),
        ("", 400, "Enter the Secret ID"),
    ]:
        r = _sign_in(client, secret)
        assert r.status_code == status and says in r.text, (secret, r.status_code)
        assert session.COOKIE not in r.headers.get("set-cookie", "")
    # An expired token is refused as an unknown one is.
    short = _token(client, root, READ_DEFAULT, "short", ExpirationTTL="1s")
    time.sleep(1.2)
    r = _sign_in(client, short["SecretID"])
    assert r.status_code == 403 and "ACL token not found" in r.text
    # Login CSRF: a post without the session's token (another site's form) signs no one in.
    forged = client.post("/ui/signin", data={"secret_id": root["X-Nomad-Token"], "csrf_token": "x" * 43},
                         follow_redirects=False)  # fmt: skip
    assert forged.status_code == 403 and session.COOKIE not in forged.headers.get("set-cookie", "")
    assert "anonymous" in client.get("/ui/signin").text


def test_the_cookie_is_http_only_same_site_strict_sealed_and_secure_over_https(
    client: TestClient, root: dict[str, str], tmp_path: Path
) -> None:
    secret = root["X-Nomad-Token"]
    r = _sign_in(client, secret, "/ui/jobs?status=running")
    assert r.status_code == 303 and r.headers["location"] == "/ui/jobs?status=running"
    cookie = next(c for c in r.headers.get_list("set-cookie") if c.startswith(session.COOKIE + "="))
    flags = [f.strip().lower() for f in cookie.split(";")]
    assert (
        "httponly" in flags and "samesite=strict" in flags and "path=/ui" in flags and "secure" not in flags
    )
    value = cookie.split(";")[0].split("=", 1)[1]
    # Not the secret: the secret sealed under this cluster's keyring, opening nowhere else.
    assert secret not in cookie and session.unseal(Keyring(tmp_path / "keyring.json"), value) == secret
    assert session.unseal(Keyring(tmp_path / "other.json"), value) is None
    assert "Signed in as <strong>Bootstrap Token</strong>" in client.get("/ui/jobs").text
    # Where one goes next is a console page, never another site.
    assert _sign_in(client, secret, "https://evil.example/ui/").headers["location"] == "/ui/"
    # Over HTTPS the cookie is Secure.
    https = TestClient(client.app, base_url="https://testserver")
    token = _csrf(https)
    r = https.post("/ui/signin", data={"csrf_token": token, "secret_id": secret}, follow_redirects=False)
    assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
    # Signing out (CSRF-checked too) forgets it.
    assert client.post("/ui/signout", data={}, follow_redirects=False).status_code == 403
    out = client.post("/ui/signout", data={"csrf_token": _csrf(client, "/ui/jobs")}, follow_redirects=False)
    assert out.status_code == 303 and f'{session.COOKIE}=""' in out.headers["set-cookie"]
    assert "anonymous" in client.get("/ui/signin").text


def test_a_read_only_token_sees_no_write_control_and_a_forged_action_is_refused(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    allocs = _cluster(client, root, store)
    reader = _token(client, root, READ_DEFAULT, "reader")
    assert _sign_in(client, reader["SecretID"]).status_code == 303
    pages = ["/ui/jobs/web@default", f"/ui/allocations/{allocs['web']}", "/ui/nodes/node-a", "/ui/nodes"]
    for p in pages:
        r = client.get(p)
        assert r.status_code == 200, p
        assert not [c for c in WRITE_CONTROLS if c in r.text], p
    assert "Signed in as <strong>reader</strong>" in r.text and "Sign out" in r.text
    token = _csrf(client, "/ui/jobs/web@default")
    before = store.last_position()
    for action, form in [
        ("/ui/job/stop/web@default", {}),
        ("/ui/job/start/web@default", {}),
        ("/ui/job/scale/web@default", {"group": "web", "count": "3"}),
        (f"/ui/allocation/stop/{allocs['web']}", {}),
        (f"/ui/allocation/restart/{allocs['web']}", {}),
        ("/ui/node/drain/node-a", {"enable": "true", "deadline": "1h"}),
        ("/ui/node/eligibility/node-a", {"eligible": "false"}),
        ("/ui/job/restart/web@default", {"batch_size": "1", "batch_wait": "0s"}),
        ("/ui/job/restart-cancel/web@default", {"restart": "x"}),
        ("/ui/job/revert/web@default", {"version": "0"}),
        ("/ui/job/periodic-force/web@default", {}),
        ("/ui/job/dispatch/web@default", {}),
        ("/ui/deployment/fail/no-such-deployment", {}),
        ("/ui/run/plan", {"spec": json.dumps(job_json("new", 1)), "format": "json"}),
        ("/ui/run", {"spec": json.dumps(job_json("new", 1)), "format": "json", "job_modify_index": "0"}),
    ]:
        r = client.post(action, data={"csrf_token": token, **form}, follow_redirects=False)
        assert r.status_code == 403, (action, r.status_code, r.text)
    assert store.last_position() == before
    assert client.get("/v1/job/web", headers=root).json()["TaskGroups"][0]["Count"] == 1

    # A token that may operate its namespace and nodes sees every control, and acts.
    operator = _token(
        client, root, 'namespace "default" { policy = "write" }\nnode { policy = "write" }', "op"
    )
    assert _sign_in(client, operator["SecretID"]).status_code == 303
    seen = "".join(client.get(p).text for p in pages)
    assert [c for c in WRITE_CONTROLS if c not in seen] == []
    token = _csrf(client, "/ui/jobs/web@default")
    r = client.post("/ui/job/scale/web@default", data={"csrf_token": token, "group": "web", "count": "2"},
                    follow_redirects=False)  # fmt: skip
    assert (
        r.status_code == 303 and client.get("/v1/job/web", headers=root).json()["TaskGroups"][0]["Count"] == 2
    )
    run = client.get("/ui/run").text
    assert ">default</option>" in run and ">secret</option>" not in run
    # Its write is of `default` alone: the secret namespace's job it may neither see nor stop.
    assert client.get("/ui/jobs/hidden@secret").status_code == 403
    assert client.post("/ui/job/stop/hidden@secret", data={"csrf_token": token}).status_code == 403


def test_a_management_token_sees_every_control(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    allocs = _cluster(client, root, store)
    assert _sign_in(client, root["X-Nomad-Token"]).status_code == 303
    seen = "".join(
        client.get(p).text
        for p in ("/ui/jobs/hidden@secret", f"/ui/allocations/{allocs['hidden']}", "/ui/nodes/node-a")
    )
    assert [c for c in WRITE_CONTROLS if c not in seen] == []
    jobs = client.get("/ui/jobs").text
    assert 'data-job="web"' in jobs and 'data-job="hidden"' in jobs


def test_no_cookie_is_the_anonymous_policy(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    _cluster(client, root, store)
    # No anonymous policy: nothing to read, and the header offers to sign in.
    jobs = client.get("/ui/jobs")
    assert jobs.status_code == 200 and 'data-job="' not in jobs.text
    assert 'class="muted">anonymous<' in jobs.text and 'href="/ui/signin?next=/ui/jobs"' in jobs.text
    refused = client.get("/ui/jobs/web@default")
    assert refused.status_code == 403 and 'href="/ui/signin?next=/ui/jobs/web%40default"' in refused.text
    assert client.get("/ui/nodes").status_code == 403
    assert 'href="/ui/nodes"' not in client.get("/ui/").text  # no Clients link or tile
    # The anonymous policy reads `default`: its job, and no control.
    rules = 'namespace "default" { policy = "read" }'
    assert (
        client.put(
            "/v1/acl/policy/anonymous", json={"Name": "anonymous", "Rules": rules}, headers=root
        ).status_code
        == 200
    )
    jobs = client.get("/ui/jobs").text
    assert 'data-job="web"' in jobs and 'data-job="hidden"' not in jobs
    page = client.get("/ui/jobs/web@default")
    assert page.status_code == 200 and "/ui/job/stop/" not in page.text
    token = _csrf(client, "/ui/jobs/web@default")
    before = store.last_position()
    assert client.post("/ui/job/stop/web@default", data={"csrf_token": token}).status_code == 403
    assert store.last_position() == before


def test_namespaces_the_token_may_not_read_are_hidden(
    client: TestClient, root: dict[str, str], store: EventStore
) -> None:
    allocs = _cluster(client, root, store)
    reader = _token(client, root, READ_DEFAULT, "reader")
    assert _sign_in(client, reader["SecretID"]).status_code == 303
    jobs = client.get("/ui/jobs").text
    assert 'data-job="web"' in jobs and 'data-job="hidden"' not in jobs
    assert "<option >secret</option>" not in jobs and "<option >default</option>" in jobs
    # A live refresh of the list (shared between tabs) is its own, too.
    assert 'data-job="hidden"' not in client.get("/ui/jobs", params={"fragment": "jobs", "at": "1"}).text
    for page in ("/ui/jobs?namespace=secret", "/ui/jobs/hidden@secret", f"/ui/allocations/{allocs['hidden']}",
                 "/ui/evaluations?namespace=secret"):  # fmt: skip
        r = client.get(page)
        assert r.status_code == 403 and "Permission denied" in r.text and "/ui/signin?next=" in r.text, page
    assert client.get(f"/ui/allocations/{allocs['hidden']}", params={"fragment": "alloc"}).status_code == 403
    evals = client.get("/ui/evaluations").text
    assert 'href="/ui/jobs/web@default"' in evals and 'href="/ui/jobs/hidden@secret"' not in evals
    node = client.get("/ui/nodes/node-a").text
    assert allocs["web"][:8] in node and allocs["hidden"][:8] not in node
    overview = client.get("/ui/").text
    assert "job:default/web" in overview and "job:secret/" not in overview
    # The pages of a job it may not read, and the topology (every namespace's allocs drawn once).
    for page in ("/ui/jobs/hidden@secret/edit", "/ui/jobs/hidden@secret/dispatch", "/ui/jobs/hidden@secret/logs",
                 f"/ui/allocations/{allocs['hidden']}/logs", "/ui/topology"):  # fmt: skip
        assert client.get(page).status_code == 403, page
    # It may submit to none: the run page offers no namespace.
    run = client.get("/ui/run").text
    assert ">default</option>" not in run and ">secret</option>" not in run
    # Nor does the search box find it; nor a live refresh of a search, even from a load another
    # token's request left to share.
    assert "hidden@secret" not in client.get("/ui/search", params={"q": "hidden"}).text
    assert _sign_in(client, root["X-Nomad-Token"]).status_code == 303
    found = {"q": "hidden", "fragment": "results"}
    assert "hidden@secret" in client.get("/ui/search", params=found).text
    assert _sign_in(client, reader["SecretID"]).status_code == 303
    assert "hidden@secret" not in client.get("/ui/search", params={**found, "at": "0"}).text
    # A management token sees both.
    assert _sign_in(client, root["X-Nomad-Token"]).status_code == 303
    assert "job:secret/hidden" in client.get("/ui/").text
    assert client.get("/ui/topology").status_code == 200
    assert client.get("/ui/jobs/hidden@secret/edit").status_code == 200
    assert 'data-job="hidden"' in client.get("/ui/jobs", params={"fragment": "jobs", "at": "1"}).text


def test_a_deleted_tokens_sign_in_is_refused_and_forgotten(client: TestClient, root: dict[str, str]) -> None:
    for page in ("/ui/jobs", "/ui/events?topic=Job:*"):
        reader = _token(client, root, READ_DEFAULT, "reader")
        assert _sign_in(client, reader["SecretID"]).status_code == 303
        assert client.get("/ui/jobs").status_code == 200
        assert client.delete(f"/v1/acl/token/{reader['AccessorID']}", headers=root).status_code == 200
        r = client.get(page)
        assert r.status_code == 403 and "no longer valid" in r.text, page
        assert f'{session.COOKIE}=""' in r.headers["set-cookie"]
        # Forgotten: the browser is anonymous now.
        again = client.get("/ui/jobs")
        assert again.status_code == 200 and 'class="muted">anonymous<' in again.text


# ---- the tab's event stream ------------------------------------------------------------------


def _event(index: int, topic: str, key: str, namespace: str) -> Frame:
    head = {"Topic": topic, "Type": "Update", "Key": key, "Namespace": namespace, "FilterKeys": []}
    return frame(index, [(head, b"{}")])


async def _messages(hub: StreamHub, sub: Subscription, reader: live.Reader, n: int) -> list[bytes]:
    body = live._stream(hub, sub, hub.frames(sub, 0, 5.0, replay_log=False), 0, reader)
    out = [await anext(body) for _ in range(n)]
    await body.aclose()
    return out


async def test_the_tabs_events_are_those_its_token_may_read() -> None:
    hub, feed = _hub()
    acl = compile_acl([parse('namespace "default" { policy = "read" }')])
    reader = live.Reader(None, "", Identity(acl))  # type: ignore[arg-type]
    tab = Subscription({"Job": {"*"}, "Node": {"*"}, "*": {"*"}}, "*")
    body = live._stream(hub, tab, hub.frames(tab, 0, 5.0, replay_log=False), 0, reader)
    assert b"event: hello" in await anext(body)
    # The secret namespace's job, a node (no node:read), an ACL token's change: none named.
    _publish(hub, feed, _event(1, "Job", "hidden", "secret"), _event(2, "Node", "n1", ""),
             _event(3, "ACLToken", "t", ""), _event(4, "Job", "web", "default"))  # fmt: skip
    assert await anext(body) == live.message("change", 4, "*:* Job:*")
    _publish(hub, feed, _event(5, "Job", "hidden", "secret"))
    _publish(hub, feed, _event(6, "Job", "web", "default"))
    assert await anext(body) in (live.message("change", 6, "*:* Job:*"), live.message("index", 6, "6"))
    await body.aclose()
    # The same frames, for a management token: every one.
    everyone = live.Reader(None, "", Identity(compile_acl([], management=True)))  # type: ignore[arg-type]
    hub, feed = _hub()
    _publish(hub, feed, _event(1, "Job", "hidden", "secret"), _event(2, "Node", "n1", ""))
    body = live._stream(hub, tab, hub.frames(tab, 0, 5.0, replay_log=False), 0, everyone)
    assert b"event: hello" in await anext(body)
    assert await anext(body) == live.message("change", 2, "*:* Job:* Node:*")
    await body.aclose()


async def test_the_tabs_stream_ends_when_its_token_is_deleted(
    client: TestClient, root: dict[str, str]
) -> None:
    reader_token = _token(client, root, READ_DEFAULT, "reader")
    resolver = client.app.state.acl  # type: ignore[attr-defined]
    who = await resolver.resolve(reader_token["SecretID"])
    assert who is not None
    reader = live.Reader(resolver, reader_token["SecretID"], who)
    hub, feed = _hub()
    tab = Subscription({"Job": {"*"}}, "*", authorize=reader.again, acl_version=hub.acl_version)
    body = live._stream(hub, tab, hub.frames(tab, 0, 5.0, replay_log=False), 0, reader)
    assert b"event: hello" in await anext(body)
    _publish(hub, feed, _event(1, "Job", "web", "default"))
    assert await anext(body) == live.message("change", 1, "Job:*")
    assert client.delete(f"/v1/acl/token/{reader_token['AccessorID']}", headers=root).status_code == 200
    hub.acl_version += 1  # what the feed does when it applies the deletion
    _publish(hub, feed, _event(2, "Job", "web", "default"))
    assert b"event: signedout" in await anext(body)
    with pytest.raises(StopAsyncIteration):
        await anext(body)


async def test_the_tabs_stream_ends_when_its_token_expires(client: TestClient, root: dict[str, str]) -> None:
    short = _token(client, root, READ_DEFAULT, "short", ExpirationTTL="1s")
    who = await client.app.state.acl.resolve(short["SecretID"])  # type: ignore[attr-defined]
    assert who is not None
    reader = live.Reader(client.app.state.acl, short["SecretID"], who)  # type: ignore[attr-defined]
    hub, feed = _hub()
    tab = Subscription({"Job": {"*"}}, "*", authorize=reader.again, acl_version=hub.acl_version)
    body = live._stream(hub, tab, hub.frames(tab, 0, 5.0, replay_log=False), 0, reader)
    assert b"event: hello" in await anext(body)
    _publish(hub, feed, _event(1, "Job", "web", "default"))
    assert await anext(body) == live.message("change", 1, "Job:*")
    time.sleep(1.2)  # no ACL change: the expiry alone ends it
    _publish(hub, feed, _event(2, "Job", "web", "default"))
    assert b"event: signedout" in await anext(body)
    with pytest.raises(StopAsyncIteration):
        await anext(body)


async def test_a_followed_log_ends_once_its_token_is_deleted_or_loses_read_logs(
    client: TestClient, root: dict[str, str]
) -> None:
    """What a log page's stream goes through (drover.api.ui.session.while_signed_in)."""
    from starlette.requests import Request

    from drover.api.ui.access import READ_LOGS, allows

    app: Any = client.app
    rules = 'namespace "default" { capabilities = ["read-job", "read-logs"] }'
    for change in ("delete", "policy"):
        tail = _token(client, root, rules, "tail")
        cookie = f"{session.COOKIE}={session.seal(app.state.keyring, tail['SecretID'])}"
        request = Request({"type": "http", "app": app, "headers": [(b"cookie", cookie.encode())]})

        async def log() -> Any:
            for i in range(1_000):
                yield f"data: line {i}\n\n".encode()

        body = session.while_signed_in(request, log(), lambda who: allows(who.acl, READ_LOGS, "default"))
        assert [await anext(body) for _ in range(2)] == [b"data: line 0\n\n", b"data: line 1\n\n"]
        if change == "delete":
            assert client.delete(f"/v1/acl/token/{tail['AccessorID']}", headers=root).status_code == 200
        else:
            ro = {"Name": "tail", "Rules": 'namespace "default" { capabilities = ["read-job"] }'}
            assert client.put("/v1/acl/policy/tail", json=ro, headers=root).status_code == 200
        with pytest.raises(StopAsyncIteration):
            await anext(body)
