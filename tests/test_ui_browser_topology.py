"""The topology in a real browser (Chromium driven by Playwright, fixtures of
test_ui_browser): a client drained from its page's form, with a deadline, loses its allocs on
the topology page open in another tab, and the other clients gain them - live, with no reload.
Screenshots of the topology, light and dark, go to $DROVER_UI_SCREENSHOTS (docs/ui/ keeps them)."""

# ruff: noqa: F811 (pytest fixtures imported from another module, named as parameters)

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .cluster import Cluster, job_json
from .test_ui_browser import _running, _shots, cluster, page  # noqa: F401

# Allocs a box holds, from its name's title ("... 3 allocs"), summed over the boxes of some nodes.
ALLOCS_ON = """ids => ids.reduce((sum, id) => {
  const a = document.querySelector(`.tnode > a[href="/ui/nodes/${id}"]`);
  const m = a && a.title.match(/(\\d+) allocs$/);
  return sum + (m ? Number(m[1]) : 0);
}, 0)"""


def test_drain_a_node_from_its_page_and_watch_its_allocs_move_on_the_topology(
    page: Page,
    cluster: Cluster,
    tmp_path: Path,
) -> None:
    c = cluster
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    c.put("/v1/jobs", job_json("web", 4, cpu=400, mem=256, rolling=False))
    c.wait(lambda: len(_running(c, "web")) == 4, timeout=30)
    allocs = _running(c, "web")
    nodes = sorted(n["ID"] for n in c.get("/v1/nodes"))
    drained = max(nodes, key=lambda n: sum(a["NodeID"] == n for a in allocs))
    others = [n for n in nodes if n != drained]
    on_drained = sum(a["NodeID"] == drained for a in allocs)

    page.goto("/ui/topology")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    page.evaluate("window.__sameDocument = true")
    box = page.locator(".tnode", has=page.locator(f'a[href="/ui/nodes/{drained}"]'))
    assert page.evaluate(ALLOCS_ON, [drained]) == on_drained > 0
    expect(box.locator(".tbar").first.locator("a")).not_to_have_count(0)

    # Drained from its page, in another tab: a deadline, and forced so that it moves at once.
    nodes_tab = page.context.new_page()
    nodes_tab.goto(f"/ui/nodes/{drained}")
    nodes_tab.fill("#drain-deadline", "10m")
    nodes_tab.check('input[name="force"]')
    nodes_tab.click(".drain-form button[type=submit]")
    expect(nodes_tab.locator(".flash")).to_have_text("Drain started")
    spec = c.get(f"/v1/node/{drained}")["DrainStrategy"]["DrainSpec"]
    assert spec["Deadline"] == -1

    # The topology follows: the drained box marked and emptied, the others holding all four.
    expect(box).to_have_class("tnode n-draining")
    expect(box.locator(".tbar").first.locator("a")).to_have_count(0, timeout=30_000)
    page.wait_for_function(f"() => ({ALLOCS_ON})({others!r}) === 4", timeout=30_000)
    assert page.evaluate("window.__sameDocument") is True  # never reloaded
    # The page counts allocs the scheduler wants running; the drained node's client reports its
    # old ones stopped a moment later, so the API's running set is waited for, not read once.
    c.wait(
        lambda: {a["NodeID"] for a in _running(c, "web")} <= set(others),
        timeout=30,
        describe=lambda: [(a["NodeID"], a["ClientStatus"]) for a in _running(c, "web")],
    )

    nodes_tab.close()
    shots = _shots(tmp_path)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto("/ui/topology")
        expect(page.locator("#live")).to_have_attribute("data-state", "live")
        page.screenshot(path=str(shots / f"topology-{scheme}.png"))
    assert errors == [], errors
