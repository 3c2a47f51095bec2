"""The event stream viewer (/ui/stream) in a real browser against a whole cluster: it shows the
events of a chosen topic from a chosen index, exactly those /v1/event/stream sends from it;
Pause stops new rows and Resume fills the gap; after the API restarts it resumes from the last
index it saw. Screenshots of the viewer and the evaluation pages, light and dark, go to
$DROVER_UI_SCREENSHOTS (docs/ui/ keeps the README's)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from drover.runtime.embedded import wait_for_port

from .cluster import Cluster, job_json
from .test_ui_browser import _shots, cluster, page  # noqa: F401

Row = tuple[int, str, str, str]


def _truth(c: Cluster, index: int, upto: int) -> list[Row]:
    """What /v1/event/stream sends of topic Job from `index` up to position `upto`."""
    out: list[Row] = []
    url = f"{c.http.base_url}/v1/event/stream"
    with httpx.stream("GET", url, params={"topic": "Job", "index": index}, timeout=30) as r:
        for line in r.iter_lines():
            frame = json.loads(line) if line.strip() else {}
            out += [(e["Index"], e["Topic"], e["Type"], e["Key"]) for e in frame.get("Events", [])]
            if frame.get("Index", 0) >= upto:
                return out
    raise AssertionError("the stream ended")


def _rows(tab: Page) -> list[Row]:
    """The viewer's rows, oldest first."""
    cells = tab.eval_on_selector_all(
        "#stream-rows tr",
        "trs => trs.map(tr => Array.from(tr.children).slice(0, 4).map(td => td.textContent))",
    )
    return [(int(i), t, ty, k) for i, t, ty, k in reversed(cells)]


def _register(c: Cluster, job_id: str) -> int:
    return int(c.put("/v1/jobs", job_json(job_id, 1, rolling=False))["JobModifyIndex"])


def test_the_event_stream_viewer_resumes_from_an_index_after_the_server_restarts(
    page: Page,  # noqa: F811
    cluster: Cluster,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _register(c, "before")
    start = _register(c, "first")
    # From a chosen index: the events from it on, none before (`before` is not shown).
    page.goto(f"/ui/stream?topic=Job&index={start}")
    bar = page.locator("#stream")
    expect(bar).to_have_attribute("data-state", "live")
    expect(page.locator('#stream-rows tr[data-key="first"]').first).to_be_visible()
    assert page.locator('#stream-rows tr[data-key="before"]').count() == 0

    # Paused: no new rows. Resumed: the gap filled from where it stopped, nothing twice.
    page.click("#stream-pause")
    expect(bar).to_have_attribute("data-state", "paused")
    expect(page.locator("#stream-pause")).to_have_attribute("aria-pressed", "true")
    paused_at = _register(c, "while-paused")
    page.wait_for_timeout(700)
    assert page.locator('#stream-rows tr[data-key="while-paused"]').count() == 0
    page.click("#stream-pause")
    expect(page.locator('#stream-rows tr[data-key="while-paused"]').first).to_be_visible()
    page.wait_for_function(f"() => Number(document.getElementById('stream').dataset.index) >= {paused_at}")

    # The API restarts: the viewer reconnects from the last index it saw.
    last = int(bar.get_attribute("data-index") or 0)
    c.kill("api")
    expect(bar).to_have_attribute("data-state", "reconnecting")
    c.spawn("api")
    wait_for_port(c.port, 60, proc=c.procs["api"][-1])
    page.wait_for_function(
        "() => Number(document.getElementById('stream').dataset.opens) >= 3", timeout=30_000
    )
    assert int(bar.get_attribute("data-resumed-from") or 0) == last
    # Event data is shown as text, never as markup.
    job = job_json("after-restart", 1, rolling=False)
    job["Job"]["Meta"] = {"note": '<img id="xss" src="x">'}
    end = int(c.put("/v1/jobs", job)["JobModifyIndex"])
    expect(page.locator('#stream-rows tr[data-key="after-restart"]').first).to_be_visible()
    page.wait_for_function(f"() => Number(document.getElementById('stream').dataset.index) >= {end}")
    # Every row the stream has from `start` on, in order, each once: no gap, no repeat.
    assert _rows(page) == _truth(c, start, end)
    # The index is shown; a payload opens as text.
    assert int(page.locator("#stream-index").text_content() or 0) >= end
    page.locator("#stream-rows tr details summary").first.click()
    expect(page.locator("#stream-rows tr details pre").first).to_contain_text('"ID": "after-restart"')
    expect(page.locator("#stream-rows tr details pre").first).to_contain_text(
        '<img id=\\"xss\\" src=\\"x\\">'
    )
    assert page.locator("#xss").count() == 0
    assert errors == [], errors

    # A job no client can take: its eval's page shows the failures and the blocked eval it left.
    c.put("/v1/jobs", job_json("too-big", 1, mem=10**6, rolling=False))
    evals = c.wait(lambda: [e for e in c.get("/v1/job/too-big/evaluations") if e["BlockedEval"]], timeout=20)
    shots = _shots(tmp_path)
    pages = {"stream": "/ui/stream?topic=*&index=1&keep=20", "evaluations": "/ui/evaluations",
             "evaluation": f"/ui/evaluations/{evals[0]['ID']}"}  # fmt: skip
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for name, url in pages.items():
            page.goto(url)
            expect(page.locator("#live")).to_have_attribute("data-state", "live")
            if name == "stream":  # every event from the log's start, replayed (the ring is new)
                expect(page.locator("#stream-rows tr")).to_have_count(20)
            if name == "evaluation":
                expect(page.locator(f'tr[data-related="{evals[0]["BlockedEval"]}"]')).to_be_visible()
                expect(page.locator('[data-failed-group="web"]')).to_contain_text("out of")
            page.screenshot(path=str(shots / f"{name}-{scheme}.png"))
