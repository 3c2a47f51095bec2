"""The topology page over HTML, in-process against a real PostgreSQL: every client a box
whose bars are filled by its allocs' CPU and memory in proportion, marks on down, draining and
ineligible clients, groups by datacenter and node pool, live group fragments answering 204 when
their group did not change; and the node page's drain form posting Nomad's drain spec, behind
the CSRF check."""

# ruff: noqa: F811 (pytest fixtures imported from another module, named as parameters)

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from drover.api.ui.topology import SEGMENTS, Topology, segments
from drover.model.events import NodeDeregistered, NodeStatusUpdated
from drover.model.events.allocs import AllocClientUpdate, AllocsClientUpdated
from drover.runtime.store import EventStore
from drover.runtime.store.topologyreads import AllocRow

from .cluster import node_json
from .test_ui_pages import _csrf, _job, _place, client  # noqa: F401


def _box(html: str, node_id: str) -> str:
    m = re.search(rf'<div class="tnode[^"]*"><a href="/ui/nodes/{node_id}".*?</span></div>', html)
    assert m, f"no box for {node_id}"
    return m.group(0)


def _widths(bar: str) -> list[float]:
    return [float(w) for w in re.findall(r'style="width:([0-9.]+)%"', bar)]


def _register(client: TestClient, node_id: str, **kw: object) -> None:
    r = client.put("/v1/drover/node/register", json={"Node": node_json(node_id, **kw)})  # type: ignore[arg-type]
    assert r.status_code == 200, r.text


def test_each_client_is_a_box_filled_in_proportion_to_its_allocs(
    client: TestClient, store: EventStore
) -> None:
    _register(client, "node-a", cpu=4000, mem=8192)
    _place(store, _job(client, store, "web", 2, cpu=500, mem=1024, rolling=False))
    _register(client, "node-b", cpu=2000, mem=4096, dc="dc2")  # after the placement: empty

    r = client.get("/ui/topology")
    assert r.status_code == 200 and 'href="/ui/topology" aria-current="page"' in r.text
    allocs = client.get("/v1/job/web/allocations").json()
    assert {a["NodeID"] for a in allocs} == {"node-a"}
    a_box = _box(r.text, "node-a")
    cpu_bar, mem_bar = re.findall(r'<span class="tbar"[^>]*>(.*?)</span>', a_box)
    # Both allocs of one job and group are one segment, linking to the job (two allocs).
    used_cpu = sum(t["Cpu"]["CpuShares"] for a in allocs for t in a["AllocatedResources"]["Tasks"].values())
    used_mem = sum(t["Memory"]["MemoryMB"] for a in allocs for t in a["AllocatedResources"]["Tasks"].values())
    assert _widths(cpu_bar) == [round(100 * used_cpu / 4000, 1)] == [25.0]
    assert _widths(mem_bar) == [round(100 * used_mem / 8192, 1)] == [25.0]
    status = allocs[0]["ClientStatus"]  # pending: no client runs them here
    assert 'href="/ui/jobs/web@default"' in cpu_bar and f"web / web: 2 allocs ({status})" in cpu_bar
    assert 'href="/ui/nodes/node-a"' in a_box and f"s-{status}" in cpu_bar
    assert _widths(_box(r.text, "node-b")) == []  # nothing on it
    # Grouped by datacenter / node pool, with the cluster's totals on top.
    assert r.text.index("dc1 <span") < r.text.index('href="/ui/nodes/node-a"') < r.text.index("dc2 <span")
    assert r.text.index('href="/ui/nodes/node-a"') < r.text.index('href="/ui/nodes/node-b"')
    assert f"CPU reserved: {used_cpu:,} of 6,000 MHz" in r.text
    assert f"Memory reserved: {used_mem:,} of 12,288 MiB" in r.text

    gone, kept = allocs[0]["ID"], allocs[1]["ID"]
    # One alloc running, the other complete (gone from the picture): the segment is the running
    # alloc's own, half as wide, linking to its page.
    updates = [
        AllocClientUpdate(id=kept, client_status="running"),
        AllocClientUpdate(id=gone, client_status="complete"),
    ]
    store.append([AllocsClientUpdated(node_id="node-a", updates=updates)])
    a_box = _box(client.get("/ui/topology").text, "node-a")
    assert _widths(a_box) == [12.5, 12.5] and f'href="/ui/allocations/{kept}"' in a_box
    assert gone not in a_box and "s-running" in a_box


def test_down_draining_and_ineligible_clients_are_marked(client: TestClient, store: EventStore) -> None:
    for n in ("node-a", "node-b", "node-c", "node-d"):
        _register(client, n)
    client.put("/v1/node/node-b/eligibility", json={"Eligibility": "ineligible"})
    client.put("/v1/node/node-c/drain", json={"DrainSpec": {"Deadline": 3600 * 10**9}})
    store.append([NodeStatusUpdated(node_id="node-d", status="down")])

    html = client.get("/ui/topology").text
    assert 'class="tnode"' in _box(html, "node-a") and "<b" not in _box(html, "node-a")
    assert 'class="tnode n-ineligible"' in _box(html, "node-b") and ">ineligible</b>" in _box(html, "node-b")
    assert 'class="tnode n-draining"' in _box(html, "node-c") and ">draining</b>" in _box(html, "node-c")
    assert 'class="tnode n-down"' in _box(html, "node-d") and ">down</b>" in _box(html, "node-d")
    counts = re.search(r'<p class="tcounts">(.*?)</p>', html, re.S)
    assert counts and "4 clients" in counts.group(1)
    assert re.search(r">down</span> 1", counts.group(1)) and re.search(r">draining</span> 1", counts.group(1))
    assert re.search(r">ineligible</span> 2", counts.group(1))  # a drain makes its node ineligible too


def test_a_group_fragment_answers_204_until_its_group_changes(client: TestClient, store: EventStore) -> None:
    _register(client, "node-a")
    _register(client, "node-b", dc="dc2")
    html = client.get("/ui/topology").text
    urls = {
        m.replace("&amp;", "&") for m in re.findall(r'hx-get="(/ui/topology\?fragment=group[^"]*)"', html)
    }
    assert len(urls) == 2 and 'data-topics="Allocation:* Node:*"' in html
    dc1 = next(u for u in urls if "dc=dc1" in u)
    dc2 = next(u for u in urls if "dc=dc2" in u)
    index = int(re.search(r'data-index="(\d+)"', html).group(1))  # type: ignore[union-attr]
    assert client.get(f"{dc1}&at={index}").status_code == 204

    _place(store, _job(client, store, "web", 1, rolling=False))  # lands on node-a (dc1 only)
    at = store.last_position()
    r1 = client.get(f"{dc1}&at={at}")
    assert r1.status_code == 200 and 'id="f-g-' in r1.text and "s-running" not in r1.text  # pending
    assert "s-pending" in r1.text
    assert client.get(f"{dc2}&at={at}").status_code == 204  # the other group: nothing to redraw
    new_url = re.search(r'hx-get="([^"]+)"', r1.text).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    assert new_url != dc1 and client.get(f"{new_url}&at={at}").status_code == 204

    # A new group (a client in a new datacenter): the totals ask for a reload.
    totals = re.search(r'hx-get="(/ui/topology\?fragment=totals[^"]*)"', html).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    assert client.get(totals).status_code == 200
    _register(client, "node-c", dc="dc3")
    r = client.get(f"{totals}&at={store.last_position()}")
    assert r.status_code == 204 and r.headers["hx-refresh"] == "true"
    assert client.get("/ui/topology?fragment=nope").status_code == 404


@pytest.mark.parametrize(
    ("groups", "shown", "folded"),
    [
        (1, 1, 0),
        (SEGMENTS, SEGMENTS, 0),
        (SEGMENTS + 1, SEGMENTS - 1, 2),
        (50, SEGMENTS - 1, 50 - SEGMENTS + 1),
    ],
)
def test_a_node_of_many_jobs_folds_the_smallest_segments(groups: int, shown: int, folded: int) -> None:
    allocs = [
        AllocRow(f"a{i}", "n", "default", f"job{i}", "g", "running", True, 100 + i, 10) for i in range(groups)
    ]
    segs = segments(allocs)
    assert len(segs) == min(groups, SEGMENTS)
    assert [s.label for s in segs[:shown]] == [f"job{i} / g" for i in reversed(range(groups))][:shown]
    more = [s for s in segs if s.status == "more"]
    assert (more[0].count if more else 0) == folded
    assert sum(s.cpu for s in segs) == sum(a.cpu for a in allocs)  # nothing lost in the folding


def test_the_drain_form_posts_nomads_drain_spec_behind_the_csrf_check(client: TestClient) -> None:
    _register(client, "node-a")
    page = client.get("/ui/nodes/node-a").text
    for field in (
        'name="deadline"',
        'name="ignore_system_jobs"',
        'name="force"',
        'action="/ui/node/drain/node-a"',
    ):
        assert field in page
    form = {"enable": "true", "deadline": "30m", "ignore_system_jobs": "true"}

    r = client.post("/ui/node/drain/node-a", data=form, follow_redirects=False)  # no token
    assert r.status_code == 403 and client.get("/v1/node/node-a").json()["DrainStrategy"] is None
    token = _csrf(client, "/ui/nodes/node-a")
    r = client.post("/ui/node/drain/node-a", data={**form, "csrf_token": "x" * 43}, follow_redirects=False)
    assert r.status_code == 403 and client.get("/v1/node/node-a").json()["DrainStrategy"] is None

    r = client.post("/ui/node/drain/node-a", data={**form, "csrf_token": token})
    node = client.get("/v1/node/node-a").json()
    assert node["DrainStrategy"]["DrainSpec"] == {"Deadline": 30 * 60 * 10**9, "IgnoreSystemJobs": True}
    assert node["SchedulingEligibility"] == "ineligible"
    assert "Drain started" in r.text and "drain-cancel" in r.text and "Drain deadline" in r.text

    # Cancelled and made eligible again; then forced (deadline -1, whatever was typed).
    client.post(
        "/ui/node/drain/node-a", data={"enable": "false", "mark_eligible": "true", "csrf_token": token}
    )
    node = client.get("/v1/node/node-a").json()
    assert node["DrainStrategy"] is None and node["SchedulingEligibility"] == "eligible"
    client.post(
        "/ui/node/drain/node-a",
        data={"enable": "true", "deadline": "2h", "force": "true", "csrf_token": token},
    )
    assert client.get("/v1/node/node-a").json()["DrainStrategy"]["DrainSpec"]["Deadline"] == -1
    client.post("/ui/node/drain/node-a", data={"enable": "false", "csrf_token": token})

    # A bad deadline changes nothing and says why.
    for bad in ("soon", "-5m"):
        r = client.post(
            "/ui/node/drain/node-a", data={"enable": "true", "deadline": bad, "csrf_token": token}
        )
        assert "flash-error" in r.text and f"Invalid deadline &#39;{bad}&#39;" in r.text
        assert client.get("/v1/node/node-a").json()["DrainStrategy"] is None


def test_the_topology_is_in_the_navigation_and_its_shortcut(client: TestClient) -> None:
    html = client.get("/ui/").text
    assert 'href="/ui/topology"' in html and "<kbd>g</kbd> <kbd>t</kbd></dt><dd>Topology</dd>" in html
    js = client.get("/ui/static/drover.js").text
    assert 't: "/ui/topology"' in js


def test_the_picture_kept_up_to_date_equals_one_read_whole(client: TestClient, store: EventStore) -> None:
    _register(client, "node-a")
    _register(client, "node-b")
    assert client.get("/ui/topology").status_code == 200  # the first read, whole
    _place(store, _job(client, store, "web", 4, cpu=300, rolling=False))
    assert client.get("/ui/topology").status_code == 200  # the placements, read as rows changed
    allocs = client.get("/v1/job/web/allocations").json()
    updates = [
        AllocClientUpdate(id=a["ID"], client_status=s)
        for a, s in zip(allocs, ("running", "failed", "running", "pending"), strict=False)
    ]
    store.append([AllocsClientUpdated(node_id="node-a", updates=updates)])
    client.put("/v1/node/node-b/drain", json={"DrainSpec": {"Deadline": 3600 * 10**9}})
    store.append([NodeDeregistered(node_id="node-a")])
    _register(client, "node-c", dc="dc2")
    html = client.get("/ui/topology").text

    kept: Topology = client.app.state.ui_topology  # type: ignore[attr-defined]
    fresh = Topology()
    fresh.sync(client.app.state.reads)  # type: ignore[attr-defined]
    assert kept.at == fresh.at == store.last_position()
    assert kept.boxes == fresh.boxes and set(kept.boxes) == {"node-b", "node-c"}
    assert kept.members == fresh.members and kept.where == fresh.where
    assert 'href="/ui/nodes/node-a"' not in html and 'href="/ui/nodes/node-c"' in html
