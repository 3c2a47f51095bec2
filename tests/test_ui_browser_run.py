"""The job editor in a real browser (Chromium through Playwright, a whole cluster with `drover
sim` nodes): a job written in the editor is planned, its diff reviewed, run, and its allocs turn
running on its page without a reload; edited, its plan shows the change. Screenshots of the run
page with that plan's diff, light and dark, go to $DROVER_UI_SCREENSHOTS."""

from __future__ import annotations

from pathlib import Path

from . import test_ui_browser
from .cluster import Cluster
from .test_ui_browser import Page, _running, _shots, expect

# The fixtures: a cluster with four sim nodes, and a browser page on it.
cluster = test_ui_browser.cluster
page = test_ui_browser.page

HCL = """job "web" {
  datacenters = ["dc1"]
  update {
    max_parallel = 0
  }
  group "web" {
    count = 3
    task "web" {
      driver = "mock"
      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
"""


def test_run_a_job_from_the_editor_after_its_plan_diff_then_watch_its_allocs_turn_running(
    page: Page, cluster: Cluster, tmp_path: Path
) -> None:
    c = cluster
    errors: list[str] = []
    # (a plan refused with 400 is an answer the page shows, which Chromium logs as a failed load)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and not
            m.location.get("url", "").endswith("/ui/run/plan") else None)  # fmt: skip
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("/ui/jobs")
    page.get_by_role("link", name="Run job").click()
    expect(page).to_have_url(f"{c.http.base_url}/ui/run")

    editor = page.locator("#spec")
    editor.focus()
    page.keyboard.press("Tab")  # indents, and focus stays in the editor
    assert editor.input_value() == "  " and page.evaluate("document.activeElement.id") == "spec"
    editor.fill(HCL.replace("count = 3", 'count = "three"'))
    page.get_by_role("button", name="Plan").click()
    expect(page.locator("#plan .problems li[data-line='7']")).to_contain_text("a number is required")

    editor.fill(HCL)
    page.get_by_role("button", name="Plan").click()
    group = page.locator('#plan .diff [data-group="web"]')
    expect(group.locator(".updates").first).to_have_text("(3 create)")
    expect(page.locator('#plan [data-updates="web"] [data-count="place"]')).to_have_text("3")
    assert c.get("/v1/jobs") == []  # a plan writes nothing

    # An edit after the plan makes it stale: Run waits for a new plan.
    editor.press("End")
    editor.type(" ")
    expect(page.locator("#run-button")).to_be_disabled()
    page.get_by_role("button", name="Plan").click()
    expect(page.locator("#run-button")).to_be_enabled()

    page.get_by_role("button", name="Run").click()
    expect(page).to_have_url(f"{c.http.base_url}/ui/jobs/web@default")
    expect(page.locator(".flash-ok")).to_have_text("Job web registered, version 0")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    page.evaluate("window.__sameDocument = true")
    # The sim nodes start the allocs; the page follows them over its event stream.
    expect(page.locator('#f-allocations tr[data-status="running"]')).to_have_count(3, timeout=30_000)
    assert page.evaluate("window.__sameDocument") is True  # never reloaded
    assert len(_running(c, "web")) == 3

    # Edit it (from its JSON): the plan's diff names the field changed and what it forces.
    page.get_by_role("link", name="Edit").click()
    editor.fill(editor.input_value().replace('"Count": 3', '"Count": 5'))
    page.get_by_role("button", name="Plan").click()
    expect(page.locator('#plan [data-field="Count"]')).to_contain_text('Count: "3" => "5" (forces create)')
    shots = _shots(tmp_path)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(shots / f"run-{scheme}.png"), full_page=True)
    assert errors == [], errors
