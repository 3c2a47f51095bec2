"""A job restart driven from the job's page in a real browser, against a cluster of `drover sim`
clients: started from the form, its batches seen progressing with no reload, paused (no batch
goes out while it is), resumed and carried to the end; the timeline tells it. Screenshots of
the job page with its timeline, light and dark (job-timeline-*.png), go to
$DROVER_UI_SCREENSHOTS (docs/ui/ keeps the README's)."""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import Page, expect

from .cluster import Cluster, job_json
from .test_ui_browser import _running, _shots, cluster, page  # noqa: F401

# Long enough to pause between two batches and see that none goes out; short enough that the
# three batches take a few seconds.
BATCH_WAIT = 2


def _restarted(tab: Page) -> int:
    return int(tab.locator("#f-restart [data-restarted]").get_attribute("data-restarted") or -1)


def test_restart_a_job_from_its_page_pause_and_resume_it_and_see_batches_progress(
    page: Page,  # noqa: F811
    cluster: Cluster,  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    c.put("/v1/jobs", job_json("api", 3, rolling=False))
    c.wait(lambda: len(_running(c, "api")) == 3, timeout=30)
    page.goto("/ui/jobs/api@default")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")

    form = page.locator("form.restart-start")
    form.get_by_label("Batch size").fill("1")
    form.get_by_label("Wait between batches").fill(f"{BATCH_WAIT}s")
    form.get_by_role("button", name="Restart").click()
    expect(page.locator(".flash-ok")).to_have_text("Restart of api started")
    restart = page.locator("#f-restart .restart")
    expect(page.locator("#f-restart [data-total]")).to_have_attribute("data-total", "3")
    page.evaluate("window.__sameDocument = true")

    # The first batch goes out and is done; the page follows live.
    expect(page.locator("#f-restart [data-batches-done]")).to_have_attribute("data-batches-done", "1")
    expect(restart).to_have_attribute("data-restart-status", "running")
    page.get_by_role("button", name="Pause restart").click()
    expect(page.locator(".flash-ok")).to_have_text("Restart paused")
    expect(restart).to_have_attribute("data-restart-status", "paused")
    held = _restarted(page)
    assert held in (1, 2)
    # Paused past a whole batch wait: no batch goes out.
    time.sleep(BATCH_WAIT + 1)
    assert c.get("/v1/job/api/restarts")[0]["Status"] == "paused"
    assert len(c.get("/v1/job/api/restarts")[0]["RestartedAllocs"]) == held

    page.get_by_role("button", name="Resume restart").click()
    expect(page.locator(".flash-ok")).to_have_text("Restart resumed")
    page.evaluate("window.__sameDocument = true")
    expect(restart).to_have_attribute("data-restart-status", "complete", timeout=30_000)
    assert _restarted(page) == 3 and page.evaluate("window.__sameDocument") is True  # live, no reload
    expect(page.locator("#f-restart [data-batches-done]")).to_have_attribute("data-batches-done", "3")

    timeline = page.locator("#f-timeline")
    for said in ("Job restart started: batches of 1, 2s between batches", "Job restart paused",
                 "Job restart resumed", "Job restart batch 3: 1 allocation signalled", "Job restart complete"):  # fmt: skip
        expect(timeline).to_contain_text(said)
    expect(timeline).to_contain_text("Placed 3 allocations of group web")

    shots = _shots(tmp_path)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto("/ui/jobs/api@default")
        expect(page.locator("#live")).to_have_attribute("data-state", "live")
        page.locator("#f-restart").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"job-timeline-{scheme}.png"), full_page=True)
    assert errors == [], errors
