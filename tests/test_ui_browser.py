"""The web console in a real browser: Debian's Chromium driven by Playwright, against a whole
cluster whose nodes are `drover sim`'s. A job registered through the API appears on the jobs
page and its allocs turn running with no reload, over one event-stream connection; a job page's
Stop works and a forged post is refused; the event stream resumes from the tab's last index
(Last-Event-ID) after the API restarts. Screenshots of the main pages, light and dark, go to
$DROVER_UI_SCREENSHOTS (docs/ui/ keeps the README's).

The pages run under their Content-Security-Policy here (no inline script, no eval): waits are
functions, not strings. Never `playwright install`: the pinned Playwright drives /usr/bin/chromium (`.ci/run` installs
it); without it these tests skip, except under CI, where they fail."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.runtime.embedded import wait_for_port

from .cluster import Cluster, job_json

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
ENV = {"DROVER_HEARTBEAT_MIN_TTL": "5", "DROVER_HEARTBEAT_GRACE": "5"}

if not os.path.exists(CHROMIUM) and os.environ.get("CI") != "true":
    pytest.skip(f"no {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    sim = subprocess.Popen(
        [sys.executable, "-m", "drover.client.sim", "--api", str(c.http.base_url), "--nodes", "4",
         "--prefix", "sim-"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=c.env(),
    )  # fmt: skip
    try:
        c.wait(lambda: len(c.get("/v1/nodes")) == 4, timeout=30)
        yield c
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        c.stop()


@pytest.fixture
def page(cluster: Cluster) -> Iterator[Page]:
    """A page of a browser started after the cluster: Playwright's sync API runs an event loop
    of its own, and the cluster's async fixtures must have set up before it."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(
            base_url=str(cluster.http.base_url), viewport={"width": 1280, "height": 800}
        )
        context.set_default_timeout(20_000)
        yield context.new_page()
        context.close()
        browser.close()


def _shots(tmp_path: Path) -> Path:
    out = Path(os.environ.get("DROVER_UI_SCREENSHOTS") or tmp_path / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


# Counts the tab's EventSources open at once (the most there ever were in `__es.max`), and
# notes the fragments pushed down them (`__es.pushed`: [time, id]).
COUNT_EVENT_SOURCES = """
(() => {
  const Native = window.EventSource;
  window.__es = {open: 0, max: 0, pushed: []};
  function Counted(url, options) {
    const s = new Native(url, options);
    s.addEventListener("fragment", e => window.__es.pushed.push([Date.now(), e.data.split("\\n", 1)[0]]));
    window.__es.open += 1;
    window.__es.max = Math.max(window.__es.max, window.__es.open);
    const close = s.close.bind(s);
    s.close = () => { if (!s.__closed) { s.__closed = true; window.__es.open -= 1; } close(); };
    return s;
  }
  Counted.CONNECTING = 0; Counted.OPEN = 1; Counted.CLOSED = 2;
  window.EventSource = Counted;
})();
"""


def _running(c: Cluster, job_id: str) -> list[dict[str, Any]]:
    return [a for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"]


def test_a_registered_job_appears_and_its_allocs_turn_running_without_a_reload(
    page: Page, cluster: Cluster, tmp_path: Path
) -> None:
    c = cluster
    page.add_init_script(COUNT_EVENT_SOURCES)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("/ui/jobs")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    page.evaluate("window.__sameDocument = true")

    c.put("/v1/jobs", job_json("web", 3, rolling=False))
    row = page.locator('tr[data-job="web"]')
    expect(row).to_be_visible()
    expect(row.locator(".count.running")).to_have_text("3 running", timeout=30_000)
    assert page.evaluate("window.__sameDocument") is True  # updated in place, never reloaded
    # One connection for the tab at any time (it reopens, resuming, when the rows' topics change).
    assert page.evaluate("window.__es.open") == 1 and page.evaluate("window.__es.max") == 1

    # A burst: the list arrives down the tab's one connection (no request of its own), at most
    # once a second however many events arrive, and is live as htmx content (its links boosted
    # by nothing, its forms posting).
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "fragment=" in r.url else None)
    start = page.evaluate("Date.now()")
    for i in range(8):
        c.put("/v1/jobs", job_json(f"burst-{i}", 1, rolling=False))
    expect(page.locator('tr[data-job^="burst-"]')).to_have_count(8)
    pushed = [t for t, id_ in page.evaluate("window.__es.pushed") if id_ == "f-jobs" and t >= start]
    gaps = [b - a for a, b in itertools.pairwise(pushed)]
    assert fetched == [] and pushed and all(g >= 900 for g in gaps), (fetched, gaps)
    assert page.evaluate("window.__es.open") == 1

    # A hidden tab holds no connection; shown again, it resumes from the index it had.
    hide = "hidden => { Object.defineProperty(document, 'hidden', {value: hidden, configurable: true}); " \
           "document.dispatchEvent(new Event('visibilitychange')); }"  # fmt: skip
    page.evaluate(hide, True)
    expect(page.locator("#live")).to_have_attribute("data-state", "paused")
    assert page.evaluate("window.__es.open") == 0
    index = page.evaluate("document.body.dataset.index")
    with page.expect_request(lambda r: "/ui/events" in r.url) as reopened:
        page.evaluate(hide, False)
    assert f"last={index}" in reopened.value.url
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    assert page.evaluate("window.__es.open") == 1 and page.evaluate("window.__es.max") == 1

    # The job's page follows its allocs too.
    page.click('a[href="/ui/jobs/web@default"]')
    expect(page.locator('#f-allocations tr[data-status="running"]')).to_have_count(3)

    shots = _shots(tmp_path)
    alloc = _running(c, "web")[0]["ID"]
    pages = {"overview": "/ui/", "jobs": "/ui/jobs", "job": "/ui/jobs/web@default",
             "allocation": f"/ui/allocations/{alloc}", "nodes": "/ui/nodes", "evaluations": "/ui/evaluations"}  # fmt: skip
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for name, url in pages.items():
            page.goto(url)
            expect(page.locator("#live")).to_have_attribute("data-state", "live")
            if name == "allocation":  # every client judged, loaded as the details open
                page.click("details.why summary")
                # (How many have room left depends on where binpack put the burst.)
                expect(page.locator("#f-why")).to_contain_text(re.compile(r"[0-4] of 4 clients pass"))
            page.screenshot(path=str(shots / f"{name}-{scheme}.png"), full_page=name == "allocation")
    # The system's scheme is followed; the toggle (`t`) overrides it and is kept in a cookie.
    bg = "getComputedStyle(document.body).backgroundColor"
    dark_bg = page.evaluate(bg)
    page.keyboard.press("t")
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    assert page.evaluate(bg) != dark_bg
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    # `g j` goes to the jobs page.
    page.keyboard.press("g")
    page.keyboard.press("j")
    expect(page).to_have_url(f"{c.http.base_url}/ui/jobs")
    # Nothing failed on the way: no script error, nothing the Content-Security-Policy refused.
    assert errors == [], errors


def test_stop_from_the_job_page_and_a_forged_post_is_refused(page: Page, cluster: Cluster) -> None:
    c = cluster
    c.put("/v1/jobs", job_json("api", 2, rolling=False))
    c.wait(lambda: len(_running(c, "api")) == 2, timeout=30)
    page.goto("/ui/jobs/api@default")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")

    # A post carrying another token, as a forged form would: refused, the job untouched.
    forged = page.request.post("/ui/job/stop/api@default", form={"csrf_token": "forged" * 7 + "x"})
    assert forged.status == 403 and "CSRF" in forged.text()
    # The right token from another site's page: refused too.
    token = page.locator('input[name="csrf_token"]').first.get_attribute("value")
    cross = page.request.post("/ui/job/stop/api@default", form={"csrf_token": token or ""},
                              headers={"Origin": "http://elsewhere.example"})  # fmt: skip
    assert cross.status == 403
    assert c.get("/v1/job/api")["Stop"] is False

    page.on("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".flash-ok")).to_have_text("Job api stopped")
    assert c.get("/v1/job/api")["Stop"] is True
    # The allocs stop on the sim nodes; the page shows it live, and offers Start.
    expect(page.locator('#f-allocations tr[data-status="running"]')).to_have_count(0, timeout=30_000)
    expect(page.get_by_role("button", name="Start")).to_be_visible()


def test_the_event_stream_resumes_from_the_last_index_after_the_api_restarts(
    page: Page, cluster: Cluster
) -> None:
    c = cluster
    c.put("/v1/jobs", job_json("db", 1, rolling=False))
    c.wait(lambda: len(_running(c, "db")) == 1, timeout=30)
    page.goto("/ui/jobs/db@default")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    # Something happens while the tab watches: the index it has seen moves past the page's.
    first = int(page.evaluate("document.body.dataset.index"))
    c.put("/v1/job/db/scale", {"Count": 2, "Target": {"Group": "web"}})
    expect(page.locator("#f-summary tr[data-group='web'] td").first).to_have_text("2")
    page.wait_for_function(f"() => Number(document.body.dataset.index) > {first}")
    last = int(page.evaluate("document.body.dataset.index"))

    c.kill("api")
    expect(page.locator("#live")).to_have_attribute("data-state", "reconnecting")
    c.spawn("api")
    wait_for_port(c.port, 60, proc=c.procs["api"][-1])
    # The browser reconnects by itself, resuming after the last index it saw.
    page.wait_for_function("() => Number(document.body.dataset.sseOpens) >= 2", timeout=30_000)
    assert int(page.evaluate("document.body.dataset.sseFrom")) == last
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    # And it is live again.
    c.put("/v1/job/db/scale", {"Count": 3, "Target": {"Group": "web"}})
    expect(page.locator("#f-summary tr[data-group='web'] td").first).to_have_text("3")
    c.wait(lambda: len(_running(c, "db")) == 3, timeout=30)
    expect(page.locator('#f-allocations tr[data-status="running"]')).to_have_count(3)


def test_chromium_is_found_where_ci_installs_it() -> None:
    assert shutil.which("chromium") == CHROMIUM
