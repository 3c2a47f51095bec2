"""Job diffs in Nomad's structure: what each kind of change shows as (fields by Nomad's naming,
blocks as objects, types Added/Deleted/Edited/None), what is never diffed, the plan's
annotations, and the versions' diffs in Nomad's order."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from drover.control.commands import jobs
from drover.control.diff.core import flatten_all, value_str
from drover.control.diff.job import annotate, job_diff, plan_diff, version_diffs
from drover.model import Job
from drover.scheduler.plan import DesiredUpdates

Spec = dict[str, Any]


def spec() -> Spec:
    return {
        "ID": "web",
        "Datacenters": ["dc1"],
        "Meta": {"team": "a"},
        "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
        "TaskGroups": [
            {
                "Name": "web",
                "Count": 3,
                "Tasks": [
                    {
                        "Name": "server",
                        "Driver": "docker",
                        "Config": {"image": "redis:7", "args": ["-c", "x"]},
                        "Env": {"A": "1"},
                        "Resources": {"CPU": 500, "MemoryMB": 256},
                    }
                ],
            }
        ],
    }


def job(s: Spec) -> Job:
    return jobs.prepare(Job.model_validate(s))


def edited(change: Callable[[Spec], None]) -> Job:
    s = spec()
    change(s)
    return job(s)


def group(s: Spec) -> Spec:
    g: Spec = s["TaskGroups"][0]
    return g


def task(s: Spec) -> Spec:
    t: Spec = group(s)["Tasks"][0]
    return t


def _find(items: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    found = [i for i in items or () if i["Name"] == name]
    assert len(found) == 1, f"{name} in {[i['Name'] for i in items or ()]}"
    return found[0]


def _changed_fields(d: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(f["Type"], f["Name"], f["Old"], f["New"]) for f in d["Fields"] or () if f["Type"] != "None"}


# (what changes, where the diff shows it: a path of names from the job, what it shows there)
CASES = [
    ("count", lambda s: group(s).update(Count=5), ["web"], {("Edited", "Count", "3", "5")}),
    ("job meta added", lambda s: s["Meta"].update(owner="ops"), [], {("Added", "Meta[owner]", "", "ops")}),
    ("job meta removed", lambda s: s["Meta"].clear(), [], {("Deleted", "Meta[team]", "a", "")}),
    ("priority", lambda s: s.update(Priority=70), [], {("Edited", "Priority", "50", "70")}),
    ("image", lambda s: task(s)["Config"].update(image="redis:8"), ["web", "server", "Config"],
     {("Edited", "image", "redis:7", "redis:8")}),
    ("config arg added", lambda s: task(s)["Config"]["args"].append("y"), ["web", "server", "Config"],
     {("Added", "args[2]", "", "y")}),
    ("env", lambda s: task(s)["Env"].update(A="2"), ["web", "server"], {("Edited", "Env[A]", "1", "2")}),
    ("user", lambda s: task(s).update(User="nobody"), ["web", "server"], {("Added", "User", "", "nobody")}),
    ("cpu", lambda s: task(s)["Resources"].update(CPU=700), ["web", "server", "Resources"],
     {("Edited", "CPU", "500", "700")}),
    ("kill timeout", lambda s: task(s).update(KillTimeout=9_000_000_000), ["web", "server"],
     {("Edited", "KillTimeout", "5000000000", "9000000000")}),
    ("restart", lambda s: group(s).update(RestartPolicy={"Attempts": 5}), ["web", "RestartPolicy"],
     {("Edited", "Attempts", "2", "5")}),
    ("update block", lambda s: group(s).update(Update={"MaxParallel": 2}), ["web", "Update"],
     {("Edited", "MaxParallel", "1", "2")}),
    ("datacenter added", lambda s: s["Datacenters"].append("dc2"), ["Datacenters"], {("Added", "Datacenters", "", "dc2")}),
]  # fmt: skip


@pytest.mark.parametrize(("change", "path", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_change_shows_where_nomad_shows_it(
    change: Callable[[Spec], None], path: list[str], shown: set[tuple[str, str, str, str]]
) -> None:
    d = job_diff(job(spec()), edited(change)).to_api()
    assert d["Type"] == "Edited" and d["ID"] == "web"
    node = d
    for name in path:
        children = [*(node.get("TaskGroups") or ()), *(node.get("Tasks") or ()), *(node.get("Objects") or ())]
        node = _find(children, name)
        assert node["Type"] == "Edited" or name == "Datacenters", node
    assert _changed_fields(node) == shown


def test_an_edited_block_lists_its_unchanged_fields_as_context() -> None:
    d = job_diff(job(spec()), edited(lambda s: task(s)["Config"].update(image="redis:8"))).to_api()
    config = _find(_find(d["TaskGroups"][0]["Tasks"], "server")["Objects"], "Config")
    assert [(f["Type"], f["Name"]) for f in config["Fields"]] == [
        ("None", "args[0]"),
        ("None", "args[1]"),
        ("Edited", "image"),
    ]
    # Without context, only the change.
    d = job_diff(
        job(spec()), edited(lambda s: task(s)["Config"].update(image="redis:8")), contextual=False
    ).to_api()
    config = _find(_find(d["TaskGroups"][0]["Tasks"], "server")["Objects"], "Config")
    assert [f["Name"] for f in config["Fields"]] == ["image"]


def test_a_constraint_removed_is_a_deleted_object_and_a_changed_one_a_pair() -> None:
    d = job_diff(job(spec()), edited(lambda s: s["Constraints"].clear())).to_api()
    (c,) = d["Objects"]
    assert c["Name"] == "Constraint" and c["Type"] == "Deleted"
    assert _changed_fields(c) == {("Deleted", "LTarget", "${attr.kernel.name}", ""), ("Deleted", "Operand", "=", ""),
                                  ("Deleted", "RTarget", "linux", "")}  # fmt: skip
    d = job_diff(job(spec()), edited(lambda s: s["Constraints"][0].update(RTarget="darwin"))).to_api()
    # Nomad's order: Added before Deleted.
    assert [(o["Name"], o["Type"]) for o in d["Objects"]] == [
        ("Constraint", "Added"),
        ("Constraint", "Deleted"),
    ]


def test_spreads_are_objects_with_their_targets() -> None:
    spread = {
        "Attribute": "${node.datacenter}",
        "Weight": 80,
        "SpreadTarget": [{"Value": "dc1", "Percent": 70}],
    }
    d = job_diff(job(spec()), edited(lambda s: group(s).update(Spreads=[spread]))).to_api()
    (o,) = d["TaskGroups"][0]["Objects"]
    assert (o["Name"], o["Type"]) == ("Spread", "Added")
    assert ("Added", "Weight", "", "80") in _changed_fields(o)
    (t,) = o["Objects"]
    assert (t["Name"], t["Type"]) == ("SpreadTarget", "Added") and (
        "Added",
        "Value",
        "",
        "dc1",
    ) in _changed_fields(t)


@pytest.mark.parametrize(
    "change",
    [
        lambda j: j.model_copy(
            update={"version": 4, "modify_index": 99, "job_modify_index": 98, "create_index": 3}
        ),
        lambda j: j.model_copy(update={"status": "dead", "status_description": "x", "stable": True}),
        lambda j: j.model_copy(update={"submit_time": 1_800_000_000}),
    ],
    ids=["indexes and version", "status and stable", "submit time"],
)
def test_what_nomad_does_not_diff_makes_no_diff(change: Callable[[Job], Job]) -> None:
    d = job_diff(job(spec()), change(job(spec()))).to_api()
    assert d["Type"] == "None" and d["Fields"] is None and d["Objects"] is None
    assert [(g["Type"], [t["Type"] for t in g["Tasks"]]) for g in d["TaskGroups"]] == [("None", ["None"])]


def test_a_new_job_is_all_added_and_a_removed_one_all_deleted() -> None:
    added = job_diff(None, job(spec())).to_api()
    assert added["Type"] == "Added" and added["ID"] == "web"
    assert all(f["Type"] == "Added" for f in added["Fields"]) and (
        "Added",
        "Meta[team]",
        "",
        "a",
    ) in _changed_fields(added)
    (g,) = added["TaskGroups"]
    assert g["Type"] == "Added" and ("Added", "Count", "", "3") in _changed_fields(g)
    assert g["Tasks"][0]["Type"] == "Added"
    assert "Version" not in {f["Name"] for f in added["Fields"]} and "ID" not in {
        f["Name"] for f in added["Fields"]
    }
    deleted = job_diff(job(spec()), None).to_api()
    assert deleted["Type"] == "Deleted" and all(f["Type"] == "Deleted" for f in deleted["Fields"])
    assert deleted["TaskGroups"][0]["Type"] == "Deleted"


def test_groups_and_tasks_added_or_removed_by_name() -> None:
    def add_group(s: Spec) -> None:
        extra = copy.deepcopy(group(s))
        extra["Name"] = "api"
        s["TaskGroups"].append(extra)
        group(s)["Tasks"].append({"Name": "sidecar", "Driver": "mock"})

    d = job_diff(job(spec()), edited(add_group)).to_api()
    assert [(g["Name"], g["Type"]) for g in d["TaskGroups"]] == [("api", "Added"), ("web", "Edited")]
    assert [(t["Name"], t["Type"]) for t in d["TaskGroups"][1]["Tasks"]] == [
        ("server", "None"),
        ("sidecar", "Added"),
    ]


@pytest.mark.parametrize(
    ("change", "group_updates", "count_notes", "task_notes"),
    [
        (lambda s: group(s).update(Count=5), DesiredUpdates(place=2, ignore=3), ["forces create"], []),
        (lambda s: group(s).update(Count=1), DesiredUpdates(stop=2, ignore=1), ["forces destroy"], []),
        (lambda s: task(s)["Config"].update(image="redis:8"), DesiredUpdates(destructive_update=3), None,
         ["forces create/destroy update"]),
        (lambda s: task(s).update(KillTimeout=1), DesiredUpdates(in_place_update=3), None, ["forces in-place update"]),
        (lambda s: task(s).update(Constraints=[{"LTarget": "${node.class}", "RTarget": "x"}]),
         DesiredUpdates(in_place_update=3), None, ["forces in-place update"]),
    ],
    ids=["count up", "count down", "image", "kill timeout", "task constraint"],
)  # fmt: skip
def test_the_plan_annotates_groups_and_tasks_as_nomad_does(
    change: Callable[[Spec], None],
    group_updates: DesiredUpdates,
    count_notes: list[str] | None,
    task_notes: list[str],
) -> None:
    d = plan_diff(job(spec()), edited(change), {"web": group_updates})
    g = d["TaskGroups"][0]
    labels = {"place": "create", "stop": "destroy", "ignore": "ignore", "destructive_update": "create/destroy update",
              "in_place_update": "in-place update"}  # fmt: skip
    assert g["Updates"] == {labels[k]: v for k, v in group_updates.model_dump().items() if v and k in labels}
    count = [f for f in g["Fields"] or () if f["Name"] == "Count"]
    assert (count[0]["Annotations"] if count else None) == count_notes
    assert (g["Tasks"][0]["Annotations"] or []) == task_notes


def test_a_new_group_s_tasks_force_create() -> None:
    d = annotate(job_diff(None, job(spec())), {"web": DesiredUpdates(place=3)}).to_api()
    g = d["TaskGroups"][0]
    assert g["Updates"] == {"create": 3} and g["Tasks"][0]["Annotations"] == ["forces create"]
    # A group the plan does not mention has no Updates at all (null), as in Nomad.
    assert annotate(job_diff(None, job(spec())), {}).to_api()["TaskGroups"][0]["Updates"] is None


def test_versions_diff_each_to_the_next_older_newest_first() -> None:
    v0 = job(spec()).model_copy(update={"version": 0})
    v1 = edited(lambda s: group(s).update(Count=4)).model_copy(update={"version": 1})
    v2 = edited(lambda s: group(s).update(Count=6)).model_copy(update={"version": 2})
    diffs = version_diffs([v2, v1, v0])
    assert diffs is not None and len(diffs) == 2
    counts = [_find(d["TaskGroups"][0]["Fields"], "Count") for d in diffs]
    assert [(c["Old"], c["New"]) for c in counts] == [("4", "6"), ("3", "4")]
    assert version_diffs([v0]) is None
    against = version_diffs([v2, v1, v0], against=v0)
    assert against is not None and [d["Type"] for d in against] == ["Edited", "Edited", "None"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "true"), (False, "false"), (5, "5"), (5.0, "5"), (1.5, "1.5"), (None, "nil"), ("x", "x")],
)
def test_values_print_as_nomad_prints_them(value: Any, text: str) -> None:
    assert value_str(value) == text


def test_config_flattens_by_nomad_s_naming() -> None:
    config = {"image": "x", "args": ["a", "b"], "port_map": [{"http": 80}], "mounts": []}
    assert flatten_all(config) == {"image": "x", "args[0]": "a", "args[1]": "b", "port_map[0][http]": "80"}
