"""The web console with ACLs on, in a real browser (Debian's Chromium driven by Playwright)
against an API process with ACLs enabled: an anonymous visitor is refused a job's page and
offered to sign in; signing in with a read-only token's SecretID through the page keeps it in
an HttpOnly, SameSite=Strict cookie no script can read, the tab's event stream authenticates
with it (the page goes live), no write control shows, and an action forged with the page's own
CSRF token is refused and changes nothing.

Lean: the relay and the API alone (the job needs no placement to be shown or stopped)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from drover.runtime.embedded import wait_for_port

from .cluster import Cluster, job_json
from .test_ui_browser import ARGS, CHROMIUM

READ_ONLY = 'namespace "default" { policy = "read" }'


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env={"DROVER_ACL_ENABLED": "true",
                                                       "DROVER_DATA_DIR": str(tmp_path / "data")})  # fmt: skip
    try:
        c.spawn("relay")
        c.spawn("api")
        wait_for_port(c.port, 60, proc=c.procs["api"][0])
        yield c
    finally:
        c.stop()


@pytest.fixture
def page(cluster: Cluster) -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(
            base_url=str(cluster.http.base_url), viewport={"width": 1280, "height": 800}
        )
        context.set_default_timeout(20_000)
        yield context.new_page()
        context.close()
        browser.close()


def test_a_read_only_token_signs_in_sees_no_write_control_and_a_forged_action_is_refused(
    page: Page, cluster: Cluster
) -> None:
    c = cluster
    r = c.http.post("/v1/acl/bootstrap")
    assert r.status_code == 200, r.text
    root = {"X-Nomad-Token": r.json()["SecretID"]}
    assert c.http.put("/v1/jobs", json=job_json("web", 2, rolling=False), headers=root).status_code == 200
    assert (
        c.http.put("/v1/acl/policy/ro", json={"Name": "ro", "Rules": READ_ONLY}, headers=root).status_code
        == 200
    )
    r = c.http.post(
        "/v1/acl/token", json={"Name": "viewer", "Type": "client", "Policies": ["ro"]}, headers=root
    )
    assert r.status_code == 200, r.text
    secret = r.json()["SecretID"]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # Anonymous (no anonymous policy): refused, and offered to sign in.
    response = page.goto("/ui/jobs/web@default")
    assert response is not None and response.status == 403
    expect(page.locator("#who")).to_have_text("anonymous")
    page.get_by_role("link", name="Sign in with another token").click()
    page.get_by_label("Secret ID").fill(secret)
    page.get_by_role("button", name="Sign in").click()

    # Back on the job's page, as the viewer, live over the tab's event stream (the cookie).
    expect(page).to_have_url(f"{c.http.base_url}/ui/jobs/web@default")
    expect(page.locator("#who")).to_contain_text("Signed in as viewer")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    cookie = next(k for k in page.context.cookies() if k["name"] == "drover_token")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert secret not in cookie["value"] and "drover_token" not in page.evaluate("document.cookie")
    # No write control: neither Stop nor Scale.
    expect(page.locator("#f-summary tr[data-group='web']")).to_be_visible()
    for name in ("Stop", "Start", "Scale"):
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)

    # A forged stop and scale with the page's own (valid) CSRF token: refused, nothing changed.
    token = page.locator('input[name="csrf_token"]').first.get_attribute("value") or ""
    stop = page.request.post("/ui/job/stop/web@default", form={"csrf_token": token})
    scale = page.request.post(
        "/ui/job/scale/web@default", form={"csrf_token": token, "group": "web", "count": "5"}
    )
    assert (stop.status, scale.status) == (403, 403), (stop.text(), scale.text())
    job = c.http.get("/v1/job/web", headers=root).json()
    assert job["Stop"] is False and job["TaskGroups"][0]["Count"] == 2

    # Signing out makes the browser anonymous again.
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#who")).to_have_text("anonymous")
    assert errors == [], errors
    # The SecretID was posted, sealed into a cookie and used on every request: logged nowhere.
    assert secret not in c.logs()
