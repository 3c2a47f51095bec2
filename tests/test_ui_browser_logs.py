"""The logs pages in a real browser (Debian's Chromium driven by Playwright) against a cluster
with a real agent running a raw_exec task that writes a line every 0.2 s (the console's other
browser tests use `drover sim` nodes, which run nothing): a line written after the page opened
appears with no reload, Pause holds new lines until Resume, Download saves the whole log, and a
job's merged tail shows each alloc's lines under its short ID. Screenshots of both pages, light
and dark, go to $DROVER_UI_SCREENSHOTS (docs/ui/ keeps the README's)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from .cluster import Cluster
from .test_alloc_logs import end_tasks
from .test_client import AGENT_START, ENV, Agents, service_job
from .test_ui_browser import ARGS, CHROMIUM, _shots

TICKER = (
    "import os, time\n"
    "for i in range(100000):\n"
    "    print(f'tick {i} of', os.environ['NOMAD_ALLOC_ID'][:8], flush=True); time.sleep(0.2)\n"
)


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    """Every service, one agent with raw_exec, and a job "ticker" of two allocs writing."""
    c = Cluster(database_url, nats_url, tmp_path, env=ENV).start()
    agents = Agents(c, tmp_path)
    try:
        agents.start("a1", "--enable-raw-exec")
        # Registered as the agent starts: the job's blocked evaluation places it once the node
        # is ready (sooner than waiting for the node first).
        task = {"Driver": "raw_exec", "Config": {"command": sys.executable, "args": ["-c", TICKER]}}
        c.put("/v1/jobs", service_job("ticker", task, count=2))
        c.wait(lambda: len(_running(c)) == 2 or None, timeout=AGENT_START)
        yield c
    finally:
        agents.close()
        end_tasks(tmp_path / "a1")
        c.stop()


@pytest.fixture
def page(cluster: Cluster) -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(
            base_url=str(cluster.http.base_url),
            viewport={"width": 1280, "height": 800},
            accept_downloads=True,
        )
        context.set_default_timeout(15_000)
        yield context.new_page()
        context.close()
        browser.close()


def _running(c: Cluster) -> list[dict[str, Any]]:
    return [a for a in c.get("/v1/job/ticker/allocations") if a["ClientStatus"] == "running"]


def _last_tick(page: Page) -> int:
    text = page.locator("#log-lines .ln").last.text_content() or ""
    return int(text.split()[1])


def test_follow_a_tasks_log_as_it_writes_and_download_it(
    page: Page, cluster: Cluster, tmp_path: Path
) -> None:
    c = cluster
    alloc = _running(c)[0]["ID"]
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    # From the alloc's page, by its task's Logs link.
    page.goto(f"/ui/allocations/{alloc}")
    page.get_by_role("link", name="Logs of t").click()
    expect(page.locator("#log-state")).to_have_text("Following")
    expect(page.locator("#log-lines .ln").first).to_contain_text("tick ")
    page.evaluate("window.__sameDocument = true")
    opened = _last_tick(page)
    # A line written after the page opened appears, with no reload.
    expect(page.locator("#log-lines .ln", has_text=f"tick {opened + 3} of")).to_have_count(1)
    assert page.evaluate("window.__sameDocument") is True

    # Pause holds the lines that come; Resume shows them, none lost.
    page.get_by_role("button", name="Pause").click()
    held_at = _last_tick(page)
    expect(page.locator("#log-state")).to_contain_text("new lines", timeout=5_000)
    assert _last_tick(page) == held_at
    page.get_by_role("button", name="Resume").click()
    ticks = [int(t.split()[1]) for t in page.locator("#log-lines .ln").all_text_contents()]
    assert ticks == list(range(ticks[0], ticks[-1] + 1)) and ticks[-1] > held_at, ticks

    # The filter is applied by the server to what streams.
    page.fill("#log-filter", "7 of")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(f"{c.http.base_url}/ui/allocations/{alloc}/logs?task=t&type=stdout&q=7+of")
    expect(page.locator("#log-lines .ln").first).to_contain_text("7 of")
    assert all("7 of" in t for t in page.locator("#log-lines .ln").all_text_contents())

    # Download: the whole log, as the agent has it.
    with page.expect_download() as info:
        page.get_by_role("link", name="Download").click()
    download = info.value
    assert download.suggested_filename == f"{alloc[:8]}-t.stdout.log"
    saved = Path(download.path()).read_text()
    lines = saved.splitlines()
    assert lines == [f"tick {i} of {alloc[:8]}" for i in range(len(lines))] and len(lines) > opened + 3

    shots = _shots(tmp_path)
    page.fill("#log-filter", "")
    page.get_by_role("button", name="Apply").click()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto("/ui/jobs/ticker@default")
        page.get_by_role("link", name="Logs", exact=True).click()
        # The merged tail: each alloc's lines under its short ID.
        for a in _running(c):
            expect(page.locator("#log-lines .ln .src", has_text=a["ID"][:8]).first).to_be_visible()
        time.sleep(0.6)  # the allocs' new lines, interleaved, in the picture
        page.screenshot(path=str(shots / f"job-logs-{scheme}.png"))
        page.goto(f"/ui/allocations/{alloc}/logs?task=t")
        expect(page.locator("#log-state")).to_have_text("Following")
        page.screenshot(path=str(shots / f"logs-{scheme}.png"))
    assert errors == [], errors
