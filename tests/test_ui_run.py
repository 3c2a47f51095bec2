"""The console's job editor and the job page's launches, over HTML against a real PostgreSQL:
Plan lists a spec's problems with their lines, shows the diff and the scheduler's counts as
/v1/job/:id/plan computes them; Run registers with the plan's JobModifyIndex and a change made
meanwhile is a conflict; versions show their diffs and revert; a parameterized job dispatches
and a periodic one launches a child; every post needs the CSRF token."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.ui.jobtext import Problem, Spec, read
from drover.runtime.store import EventStore

from . import test_ui_pages
from .test_ui_pages import _csrf, _job, _node, _place

client = test_ui_pages.client  # the fixture: an app in-process on the test's database

HCL = """job "web" {
  datacenters = ["dc1"]
  update {
    max_parallel = 0
  }
  group "web" {
    count = COUNT
    task "web" {
      driver = "mock"
      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
"""
HX = {"HX-Request": "true"}


def _hcl(count: int | str) -> str:
    return HCL.replace("COUNT", str(count))


def _plan(client: TestClient, token: str, spec: str, **form: str) -> Any:
    return client.post("/ui/run/plan", data={"csrf_token": token, "spec": spec, **form}, headers=HX)


def _index(html: str) -> str:
    m = re.search(r'name="job_modify_index" value="(\d+)"', html)
    assert m, html[:3000]
    return m.group(1)


def _run(client: TestClient, token: str, spec: str, index: str, **form: str) -> Any:
    data = {"csrf_token": token, "spec": spec, "job_modify_index": index, **form}
    return client.post("/ui/run", data=data, follow_redirects=False)


def test_the_run_page_lists_a_specs_problems_with_their_lines(client: TestClient, store: EventStore) -> None:
    page = client.get("/ui/run")
    assert page.status_code == 200
    assert '<textarea id="spec" name="spec" class="code"' in page.text and 'data-tab-spaces="2"' in page.text
    assert '<select name="namespace">' in page.text and ">default</option>" in page.text
    assert 'href="/ui/run"' in client.get("/ui/jobs").text  # the jobs page's Run job
    token = _csrf(client, "/ui/run")
    before = store.last_position()

    # HCL: a wrong type on line 7, as the jobspec reader (and /v1/jobs/parse) words it.
    r = _plan(client, token, _hcl('"many"'))
    assert r.status_code == 400 and "<html" not in r.text  # htmx swaps the result alone
    assert re.search(
        r'<li data-line="7"><strong>Line 7:</strong> job\[web\]\.group\[web\]\.count: a number', r.text
    )
    parsed = client.post("/v1/jobs/parse", json={"JobHCL": _hcl('"many"')})
    assert parsed.status_code == 400 and "input.hcl:7: job[web].group[web].count: a number" in parsed.text
    # A brace not closed: the line the reader stopped at.
    r = _plan(client, token, 'job "web" {\n  group "web" {\n')
    assert r.status_code == 400 and re.search(r"Line \d+:</strong> syntax: unexpected end of file", r.text)
    # JSON (detected by its brace): malformed, with its line; then a wrong type, by its path.
    r = _plan(client, token, '{\n  "ID": "web",\n  "Type": \n}')
    assert r.status_code == 400 and 'data-line="4"><strong>Line 4:</strong> Malformed JSON' in r.text
    r = _plan(client, token, '{"Job": {"ID": "web", "TaskGroups": [{"Name": "web", "Count": "many"}]}}')
    assert r.status_code == 400 and "Job.TaskGroups.0.Count must be an integer" in r.text
    # Valid but refused as a register would refuse it (every problem listed).
    r = _plan(client, token, '{"ID": "web", "TaskGroups": [{"Name": "web", "Count": -1, "Tasks": []}]}')
    assert r.status_code == 400 and r.text.count("<li>") >= 2, r.text
    # Without JavaScript the form posts whole: the page again, the text kept, the problems under it.
    r = client.post("/ui/run/plan", data={"csrf_token": token, "spec": _hcl('"many"')})
    assert r.status_code == 400 and "<html" in r.text and "Line 7:" in r.text and "&#34;many&#34;" in r.text
    assert store.last_position() == before  # a plan writes nothing


def test_plan_shows_the_diff_and_the_counts_then_run_registers(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    token = _csrf(client, "/ui/run")

    # A new job: all Added, 2 to place; Run registers it (index 0: only if it does not exist).
    r = _plan(client, token, _hcl(2))
    assert r.status_code == 200 and "Plan for job <q>web</q>" in r.text
    assert re.search(r'data-job="web"><span class="mark" aria-hidden="true">\+</span>', r.text)
    assert re.search(r'data-updates="web"><th scope="row">web</th><td data-count="place">2</td>', r.text)
    assert _index(r.text) == "0"
    r = _run(client, token, _hcl(2), "0")
    assert r.status_code == 303 and r.headers["location"] == "/ui/jobs/web@default"
    assert "Job web registered, version 0" in client.get(r.headers["location"]).text
    _place(store, client.get("/v1/job/web/evaluations").json()[0]["ID"])

    # Two more: the group Edited with Nomad's update counts, its Count field annotated.
    r = _plan(client, token, _hcl(4))
    registered = client.get("/v1/job/web").json()
    assert _index(r.text) == str(registered["JobModifyIndex"])
    assert re.search(
        r'data-group="web">.*Task Group: "web" <span class="updates">\(2 create, 2 in-place update\)',
        r.text,
    )
    assert re.search(
        r'data-field="Count">.*Count: "2" =&gt; "4" <em class="note">\(forces create\)</em>', r.text
    )
    counts = dict(re.findall(r'<td data-count="([a-z-]+)">(\d+)</td>', r.text))
    # (the allocs kept move to the new version in place: only the count changed)
    assert counts == {"place": "2", "ignore": "0", "stop": "0", "migrate": "0", "canary": "0", "in-place": "2",
                      "destructive": "0"}  # fmt: skip
    # The same as /v1/job/:id/plan answers.
    api = client.put("/v1/job/web/plan", json={"Job": {**registered, "TaskGroups": [
        {**registered["TaskGroups"][0], "Count": 4}]}, "Diff": True}).json()  # fmt: skip
    updates = api["Annotations"]["DesiredTGUpdates"]["web"]
    assert (updates["Place"], updates["InPlaceUpdate"], api["Diff"]["Type"]) == (2, 2, "Edited")

    # htmx is sent to the job's page; the flash says what happened.
    r = client.post("/ui/run", data={"csrf_token": token, "spec": _hcl(4), "job_modify_index": _index(r.text)},
                    headers=HX)  # fmt: skip
    assert r.status_code == 200 and r.headers["hx-redirect"] == "/ui/jobs/web@default"
    assert client.get("/v1/job/web").json()["TaskGroups"][0]["Count"] == 4

    # What the model drops or does not carry out: the register's Warnings, as /v1 words them.
    job = {"ID": "warned", "Datacenters": ["dc1"], "VaultToken": "x",
           "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock", "Kind": "x"}]}]}  # fmt: skip
    r = _plan(client, token, json.dumps({"Job": job}))
    assert re.search(
        r'<div class="warnings" role="note">\s*<h3>Warnings</h3>\s*<p class="pre">2 warnings:', r.text
    )
    assert "VaultToken is not supported by Drover and was dropped" in r.text
    assert "group &#34;g&#34;: task &#34;t&#34;: Kind is kept but not carried out" in r.text

    # More than the clients hold: the failures with their metrics, and Run still offered.
    r = _plan(client, token, _hcl(4).replace("cpu    = 500", "cpu    = 900000"))
    assert "Placement failures" in r.text and 'data-failed-group="web"' in r.text
    assert re.search(r"1 clients evaluated of 1 in the pool; 0 filtered, 1 exhausted", r.text)
    assert "out of <code>cpu</code>" in r.text and 'id="run-button"' in r.text


def test_a_change_made_since_the_plan_is_a_conflict(client: TestClient, store: EventStore) -> None:
    _node(client, "node-a")
    _job(client, store, "web", 2, rolling=False)
    token = _csrf(client, "/ui/run")
    planned = _index(_plan(client, token, _hcl(3)).text)
    # Someone scales the job meanwhile.
    assert client.put("/v1/job/web/scale", json={"Count": 5, "Target": {"Group": "web"}}).status_code == 200
    now = str(client.get("/v1/job/web").json()["JobModifyIndex"])
    assert now != planned

    r = _run(client, token, _hcl(3), planned)
    assert r.status_code == 409
    assert (
        f"Enforcing job modify index {planned}: job exists with conflicting job modify index: {now}" in r.text
    )
    assert "The job changed since it was planned" in r.text and _index(r.text) == now  # planned afresh
    assert 'Count: "5" =&gt; "3"' in r.text
    assert client.get("/v1/job/web").json()["TaskGroups"][0]["Count"] == 5  # not overwritten

    # Run without a plan's index: refused, nothing written.
    before = store.last_position()
    assert _run(client, token, _hcl(3), "").status_code == 400 and store.last_position() == before
    # Run again with the fresh index: registered.
    assert _run(client, token, _hcl(3), now).status_code == 303
    assert client.get("/v1/job/web").json()["TaskGroups"][0]["Count"] == 3


def test_editing_starts_from_the_jobs_json_in_the_chosen_namespace(
    client: TestClient, store: EventStore
) -> None:
    _node(client, "node-a")
    _place(store, _job(client, store, "web", 2, rolling=False))
    page = client.get("/ui/jobs/web@default/edit")
    assert page.status_code == 200 and "Edit job web@default" in page.text
    spec = re.search(r'<textarea id="spec" name="spec"[^>]*>(.*?)</textarea>', page.text, re.S)
    assert spec and "&#34;JobModifyIndex&#34;" not in spec.group(1)
    import html

    text = html.unescape(spec.group(1))
    token = _csrf(client, "/ui/jobs/web@default/edit")
    r = _plan(client, token, text, namespace="default")
    assert r.status_code == 200 and "No changes." in r.text
    assert re.search(r'<td data-count="ignore">2</td>', r.text)
    assert client.get("/ui/jobs/nope@default/edit").status_code == 404
    assert 'href="/ui/jobs/web@default/edit"' in client.get("/ui/jobs/web@default").text
    # A namespace that does not exist: refused by the register's own check.
    r = _plan(client, token, text, namespace="nowhere")
    assert r.status_code == 400 and "nowhere" in r.text


def test_every_post_needs_the_csrf_token(client: TestClient, store: EventStore) -> None:
    _job(client, store, "web", 1, rolling=False)
    client.get("/ui/run")  # the session's cookie
    before = store.last_position()
    for url, form in (
        ("/ui/run/plan", {"spec": _hcl(2)}),
        ("/ui/run", {"spec": _hcl(2), "job_modify_index": "0"}),
        ("/ui/job/revert/web@default", {"version": "0", "enforce_prior_version": "0"}),
        ("/ui/job/dispatch/web@default", {}),
        ("/ui/job/periodic-force/web@default", {}),
    ):
        assert client.post(url, data=form).status_code == 403, url
        assert client.post(url, data={**form, "csrf_token": "x" * 43}).status_code == 403, url
    assert store.last_position() == before


def test_versions_show_their_diffs_and_revert(client: TestClient, store: EventStore) -> None:
    _job(client, store, "web", 2, rolling=False)
    _job(client, store, "web", 3, rolling=False)
    page = client.get("/ui/jobs/web@default").text
    versions = page[page.index('id="f-versions"') :]
    assert '<tr data-version="1">' in versions and "Diff from version 0" in versions
    assert 'Count: "2" =&gt; "3"' in versions
    # The diff is /v1's for the same versions.
    api = client.get("/v1/job/web/versions", params={"diffs": "true"}).json()["Diffs"][0]
    assert api["TaskGroups"][0]["Fields"][0]["Name"] == "Count"
    token = _csrf(client, "/ui/jobs/web@default")
    assert (
        'action="/ui/job/revert/web@default"' in versions
        and 'name="enforce_prior_version" value="1"' in versions
    )

    # Another version registered since the page was shown: the revert is refused, nothing written.
    _job(client, store, "web", 4, rolling=False)
    before = store.last_position()
    form = {"csrf_token": token, "version": "0", "enforce_prior_version": "1"}
    r = client.post("/ui/job/revert/web@default", data=form)
    assert "Current job has version 2; enforcing version 1" in r.text and store.last_position() == before

    r = client.post(
        "/ui/job/revert/web@default", data={**form, "enforce_prior_version": "2"}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == "/ui/jobs/web@default"
    job = client.get("/v1/job/web").json()
    assert job["Version"] == 3 and job["TaskGroups"][0]["Count"] == 2
    assert "Job web reverted to version 0 (now version 3)" in client.get("/ui/jobs/web@default").text


def _parameterized(client: TestClient) -> None:
    job = {"ID": "report", "Type": "batch", "Datacenters": ["dc1"],
           "ParameterizedJob": {"Payload": "optional", "MetaRequired": ["who"], "MetaOptional": ["note"]},
           "TaskGroups": [{"Name": "r", "Tasks": [{"Name": "r", "Driver": "mock",
                                                    "DispatchPayload": {"File": "input.txt"}}]}]}  # fmt: skip
    assert client.put("/v1/jobs", json={"Job": job}).status_code == 200


def test_dispatch_makes_a_child_with_the_payload_and_meta(client: TestClient, store: EventStore) -> None:
    _parameterized(client)
    page = client.get("/ui/jobs/report@default").text
    assert 'href="/ui/jobs/report@default/dispatch"' in page and "No children launched yet" in page
    form = client.get("/ui/jobs/report@default/dispatch").text
    assert 'name="meta.who" value="" required' in form and 'name="meta.note" value=""' in form
    assert "Payload (optional)" in form
    token = _csrf(client, "/ui/jobs/report@default/dispatch")

    # Required meta missing: refused with the command's words, the form kept, nothing written.
    before = store.last_position()
    r = client.post(
        "/ui/job/dispatch/report@default", data={"csrf_token": token, "payload": "hello", "meta.note": "n"}
    )
    assert r.status_code == 400 and "&#39;who&#39; are required by job &#39;report&#39;" in r.text
    assert ">hello</textarea>" in r.text and 'name="meta.note" value="n"' in r.text
    assert store.last_position() == before

    r = client.post("/ui/job/dispatch/report@default", follow_redirects=False,
                    data={"csrf_token": token, "payload": "hello\r\nworld", "meta.who": "ops", "meta.note": ""})  # fmt: skip
    assert r.status_code == 303
    child_id = r.headers["location"].removeprefix("/ui/jobs/").removesuffix("@default")
    assert child_id.startswith("report/dispatch-")
    child = client.get(f"/v1/job/{child_id}").json()
    assert child["ParentID"] == "report" and child["Meta"] == {"who": "ops"}
    import base64

    assert base64.b64decode(child["Payload"]) == b"hello\nworld"
    child_page = client.get(r.headers["location"]).text
    assert f"Dispatched {child_id}" in child_page and '/dispatch"' not in child_page.split("<main")[1][:4000]
    assert f'data-child="{child_id}"' in client.get("/ui/jobs/report@default").text
    # Not a parameterized job: no form.
    _job(client, store, "web", 1, rolling=False)
    assert client.get("/ui/jobs/web@default/dispatch").status_code == 404


def test_force_launch_makes_a_periodic_child(client: TestClient, store: EventStore) -> None:
    job = {"ID": "nightly", "Type": "batch", "Datacenters": ["dc1"],
           "Periodic": {"Spec": "0 3 * * *", "SpecType": "cron"},
           "TaskGroups": [{"Name": "n", "Tasks": [{"Name": "n", "Driver": "mock"}]}]}  # fmt: skip
    assert client.put("/v1/jobs", json={"Job": job}).status_code == 200
    page = client.get("/ui/jobs/nightly@default").text
    assert 'action="/ui/job/periodic-force/nightly@default"' in page
    token = _csrf(client, "/ui/jobs/nightly@default")
    r = client.post(
        "/ui/job/periodic-force/nightly@default", data={"csrf_token": token}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/jobs/nightly/periodic-")
    children = [j for j in client.get("/v1/jobs", params={"prefix": "nightly/"}).json()]
    assert len(children) == 1 and children[0]["ParentID"] == "nightly"
    assert f'data-child="{children[0]["ID"]}"' in client.get("/ui/jobs/nightly@default").text
    # Not periodic: refused in the command's words.
    _job(client, store, "web", 1, rolling=False)
    r = client.post("/ui/job/periodic-force/web@default", data={"csrf_token": token})
    assert "is not periodic" in r.text


def test_a_token_without_submit_job_sees_no_editor_controls_and_is_refused(
    client: TestClient, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from drover.api.ui import access

    _parameterized(client)
    token = _csrf(client, "/ui/run")
    monkeypatch.setattr(access, "may", lambda request, capability, namespace="default": False)
    assert 'href="/ui/run"' not in client.get("/ui/jobs").text
    page = client.get("/ui/jobs/report@default").text
    assert "/edit" not in page and "/dispatch" not in page and "Revert to this version" not in page
    before = store.last_position()
    assert _plan(client, token, _hcl(1)).status_code == 403
    assert _run(client, token, _hcl(1), "0").status_code == 403
    r = client.post("/ui/job/dispatch/report@default", data={"csrf_token": token, "meta.who": "x"})
    assert r.status_code == 403 and store.last_position() == before


@pytest.mark.parametrize(
    ("spec", "kind", "problems"),
    [
        (Spec('job "a" {}'), "hcl", None),
        (Spec('  {"ID": "a"}'), "json", None),
        # The switch wins over the detection.
        (
            Spec('job "a" {}', format="json"),
            "json",
            [Problem("Malformed JSON: Expecting value (column 1)", 1)],
        ),
        (Spec('{"Job": {"ID": "a", "Namespace": "x"}}', namespace="y"), "json", None),
        (Spec("   "), "hcl", [Problem("The job spec is empty")]),
        (Spec('{"ID": "a",\n"Priority": NaN}'), "json", [Problem("Malformed JSON: NaN is not a JSON value")]),
        (Spec('["a"]'), "json", [Problem("The job's JSON must be an object")]),
        (
            Spec('job "a" {\n  priority = "high"\n}'),
            "hcl",
            [Problem("job[a].priority: a number is required, not the string 'high'", 2)],
        ),
    ],
)
def test_the_editors_text_is_read_as_the_api_reads_it(
    spec: Spec, kind: str, problems: list[Problem] | None
) -> None:
    body, found = read(spec)
    assert spec.kind == kind
    if problems is None:
        assert body is not None and found == [] and body.diff is True
        assert body.job.id == "a" and body.job.namespace == (
            spec.namespace or "x" if "Namespace" in spec.text else "default"
        )
    else:
        assert body is None and found == problems
