"""Accessibility: every console page, light and dark, checked by axe-core in a real browser
(Chromium, against a cluster with `drover sim` nodes). The pages are found from the app's routes:
every GET route under /ui/ that answers HTML (not an event stream nor a download), its path parameters filled
from the cluster's objects - a new page is checked without this file changing (a new kind of
parameter fails here until it is given an object). A `critical` violation fails the test;
`serious` ones fail it too, listed with the rest.

axe-core 4.14.1 (MPL-2.0, Deque Systems) is vendored under tests/vendor/axe/ - axe.min.js as
published, its licence header intact - and is not served by the app: it is injected into each
page by the test, whose browser context alone bypasses the pages' Content-Security-Policy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from playwright.sync_api import Page, expect, sync_playwright

from drover.api.ui import routes

from .cluster import Cluster, job_json
from .test_ui_browser import ARGS, CHROMIUM, cluster  # noqa: F401

AXE = Path(__file__).parent / "vendor" / "axe" / "axe.min.js"
FAILING = ("critical", "serious")

SETTLED = """() => {
  const live = document.getElementById("live");
  return document.readyState === "complete" && (!live || live.dataset.state !== "connecting" ||
    !document.querySelector("[data-topics]:not([data-topics='']), #stream:not([data-off])"));
}"""
RUN_AXE = """async () => {
  const r = await axe.run(document, {resultTypes: ["violations"]});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                 nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))}));
}"""


def console_pages() -> list[str]:
    """Every console GET route's path under /ui (pages, and streams and downloads, which
    `_is_page` tells apart by what they answer)."""
    return [
        r.path
        for r in routes()
        if isinstance(r, APIRoute) and "GET" in r.methods and r.path.startswith("/ui")
    ]


def _is_page(c: Cluster, url: str) -> bool:
    """Whether `url` answers HTML (an event stream or a download does not): its headers only."""
    with httpx.stream("GET", f"{c.http.base_url}{url}", timeout=20) as r:
        return r.headers.get("content-type", "").startswith("text/html")


@pytest.fixture
def axe_page(cluster: Cluster) -> Iterator[Page]:  # noqa: F811
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        # Only so that the test may inject axe: the pages' CSP allows no script but their own.
        context = browser.new_context(
            base_url=str(cluster.http.base_url), viewport={"width": 1280, "height": 800}, bypass_csp=True
        )
        context.set_default_timeout(20_000)
        yield context.new_page()
        context.close()
        browser.close()


def _objects(c: Cluster) -> dict[str, str]:
    """A value for each path parameter the console's pages take, from a running job."""
    c.put("/v1/jobs", job_json("web", 2, rolling=False))
    c.wait(
        lambda: sum(a["ClientStatus"] == "running" for a in c.get("/v1/job/web/allocations")) == 2, timeout=30
    )
    alloc = c.get("/v1/job/web/allocations")[0]
    return {"ref": "web@default", "alloc_id": alloc["ID"], "node_id": alloc["NodeID"],
            "eval_id": c.get("/v1/job/web/evaluations")[0]["ID"], "deployment_id": ""}  # fmt: skip


def _fill(path: str, objects: dict[str, str]) -> str:
    for name, value in objects.items():
        path = path.replace("{" + name + ":path}", value).replace("{" + name + "}", value)
    assert "{" not in path, f"no object for {path}: give _objects one for its parameter"
    return path


def test_every_console_page_passes_axe_light_and_dark(axe_page: Page, cluster: Cluster) -> None:  # noqa: F811
    page = axe_page
    paths = console_pages()
    # The pages the console has today are all found (and any new one with them).
    assert {"/ui/", "/ui/jobs", "/ui/jobs/{ref:path}", "/ui/allocations/{alloc_id}", "/ui/nodes",
            "/ui/nodes/{node_id}", "/ui/evaluations", "/ui/evaluations/{eval_id}", "/ui/stream"} <= set(paths)  # fmt: skip
    objects = _objects(cluster)
    urls = [url for url in (_fill(p, objects) for p in paths) if _is_page(cluster, url)]
    assert "/ui/events" not in urls and "/ui/stream" in urls
    # The not-found page, a form's errors, the viewer with rows (the log from its start).
    urls += ["/ui/jobs/nope@default", "/ui/stream?topic=Nope", "/ui/stream?topic=*&index=1"]
    found: dict[str, list[dict[str, Any]]] = {}
    for url in urls:
        page.emulate_media(color_scheme="light")
        page.goto(url)
        # Settled: its live parts connected, or told why not (a sim alloc has no log to follow).
        page.wait_for_function(SETTLED)
        if "index=1" in url:
            expect(page.locator("#stream-rows tr").first).to_be_visible()
        page.add_script_tag(path=str(AXE))
        # Both themes on one load: the stylesheet follows the system's scheme.
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            violations = page.evaluate(RUN_AXE)
            bad = [v for v in violations if v["impact"] in FAILING]
            if bad:
                found[f"{url} ({scheme})"] = bad
            for v in violations:
                if v["impact"] not in FAILING:
                    print(f"axe {v['impact']}: {url} ({scheme}) {v['id']}: {v['help']} {v['nodes']}")
    assert not found, json.dumps(found, indent=1)
