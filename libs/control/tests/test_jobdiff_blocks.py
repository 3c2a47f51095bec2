"""Job diffs of a group's and a task's blocks in Nomad's names and shapes: networks with their
ports as objects ("Network", "Static Port", "Dynamic Port", "DNS"), services with their checks,
templates, artifacts, volumes and mounts, lifecycle, scaling with its policy, vault, identities,
and the job's UI and multiregion blocks; and which of them the plan takes as destructive."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from drover.control.commands import jobs
from drover.control.diff.job import job_diff, plan_diff
from drover.model import Job
from drover.scheduler.plan import DesiredUpdates

Spec = dict[str, Any]
SECOND = 1_000_000_000

_BASE: Spec = {
    "ID": "web",
    "TaskGroups": [
        {
            "Name": "web",
            "Count": 2,
            "Networks": [
                {
                    "DynamicPorts": [{"Label": "http", "To": 8080}],
                    "ReservedPorts": [{"Label": "admin", "Value": 9090}],
                }
            ],
            "Services": [
                {
                    "Name": "web",
                    "PortLabel": "http",
                    "Provider": "nomad",
                    "Tags": ["v1"],
                    "Checks": [{"Name": "alive", "Type": "http", "Path": "/health",
                                "Interval": 10 * SECOND, "Timeout": 2 * SECOND}],
                }
            ],
            "Volumes": {"data": {"Name": "data", "Type": "host", "Source": "data"}},
            "Scaling": {"Min": 1, "Max": 5},
            "Tasks": [
                {
                    "Name": "server",
                    "Driver": "docker",
                    "Config": {"image": "nginx:1"},
                    "VolumeMounts": [{"Volume": "data", "Destination": "/srv"}],
                    "Artifacts": [{"GetterSource": "https://example.com/app.tgz", "RelativeDest": "local/app"}],
                    "Templates": [{"EmbeddedTmpl": "a", "DestPath": "local/app.env"}],
                    "Vault": {"Role": "web"},
                    "Identities": [{"Name": "consul", "Audience": ["consul.io"]}],
                },
                {"Name": "init", "Driver": "docker", "Config": {"image": "busybox:1"}, "Lifecycle": {"Hook": "prestart"}},
            ],
        }
    ],
}  # fmt: skip


def job(s: Spec) -> Job:
    return jobs.prepare(Job.model_validate(s))


def edited(change: Callable[[Spec], None]) -> Job:
    s = copy.deepcopy(_BASE)
    change(s)
    return job(s)


def group(s: Spec) -> Spec:
    g: Spec = s["TaskGroups"][0]
    return g


def net(s: Spec) -> Spec:
    n: Spec = group(s)["Networks"][0]
    return n


def task(s: Spec) -> Spec:
    t: Spec = group(s)["Tasks"][0]
    return t


def _objects(node: dict[str, Any], name: str) -> list[dict[str, Any]]:
    children = [*(node.get("TaskGroups") or ()), *(node.get("Tasks") or ()), *(node.get("Objects") or ())]
    return [c for c in children if c["Name"] == name]


def _changes(d: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(f["Type"], f["Name"], f["Old"], f["New"]) for f in d["Fields"] or () if f["Type"] != "None"}


def _at(diff: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """The one object at a path of names (`Name:Type` where the name appears more than once)."""
    node = diff
    for step in path:
        name, _, kind = step.partition(":")
        found = [o for o in _objects(node, name) if not kind or o["Type"] == kind]
        assert len(found) == 1, f"{step} in {[(o['Name'], o['Type']) for o in _objects(node, name)]}"
        node = found[0]
    return node


# (what changes, where the diff shows it, what it shows there)
CASES = [
    ("static port value", lambda s: net(s)["ReservedPorts"][0].update(Value=9091),
     ["web", "Network:Added", "Static Port"], {("Added", "Value", "", "9091"), ("Added", "Label", "", "admin"),
      ("Added", "To", "", "0"), ("Added", "HostNetwork", "", "default"), ("Added", "IgnoreCollision", "", "false")}),
    ("static port value, before", lambda s: net(s)["ReservedPorts"][0].update(Value=9091),
     ["web", "Network:Deleted", "Static Port"], {("Deleted", "Value", "9090", ""), ("Deleted", "Label", "admin", ""),
      ("Deleted", "To", "0", ""), ("Deleted", "HostNetwork", "default", ""), ("Deleted", "IgnoreCollision", "false", "")}),
    ("dynamic port: no value", lambda s: net(s)["DynamicPorts"][0].update(To=8081),
     ["web", "Network:Added", "Dynamic Port"], {("Added", "Label", "", "http"), ("Added", "To", "", "8081"),
      ("Added", "HostNetwork", "", "default")}),
    ("network mode", lambda s: net(s).update(Mode="bridge"), ["web", "Network:Added"], {("Added", "Mode", "", "bridge")}),
    ("network dns", lambda s: net(s).update(DNS={"Servers": ["1.1.1.1", "8.8.8.8"]}), ["web", "Network:Added", "DNS"],
     {("Added", "Servers", "", "1.1.1.1,8.8.8.8")}),
    ("service tag", lambda s: group(s)["Services"][0]["Tags"].append("v2"), ["web", "Service", "Tags"],
     {("Added", "Tags", "", "v2")}),
    ("service meta", lambda s: group(s)["Services"][0].update(Meta={"a": "b"}), ["web", "Service"],
     {("Added", "Meta[a]", "", "b")}),
    ("check interval", lambda s: group(s)["Services"][0]["Checks"][0].update(Interval=30 * SECOND),
     ["web", "Service", "Check"], {("Edited", "Interval", "10000000000", "30000000000")}),
    ("check added", lambda s: group(s)["Services"][0]["Checks"].append(
        {"Name": "port", "Type": "tcp", "Interval": SECOND, "Timeout": SECOND}),
     ["web", "Service", "Check:Added"], {("Added", "Name", "", "port"), ("Added", "Type", "", "tcp"),
      ("Added", "Interval", "", "1000000000"), ("Added", "Timeout", "", "1000000000"),
      ("Added", "OnUpdate", "", "require_healthy"), ("Added", "Expose", "", "false"), ("Added", "GRPCUseTLS", "", "false"),
      ("Added", "TLSSkipVerify", "", "false"), ("Added", "SuccessBeforePassing", "", "0"),
      ("Added", "FailuresBeforeCritical", "", "0"), ("Added", "FailuresBeforeWarning", "", "0")}),
    ("check header", lambda s: group(s)["Services"][0]["Checks"][0].update(Header={"X-A": ["1"]}),
     ["web", "Service", "Check", "Header"], {("Added", "X-A[0]", "", "1")}),
    ("check restart", lambda s: group(s)["Services"][0]["Checks"][0].update(CheckRestart={"Limit": 3}),
     ["web", "Service", "Check", "CheckRestart"], {("Added", "Limit", "", "3"), ("Added", "Grace", "", "1000000000"),
      ("Added", "IgnoreWarnings", "", "false")}),
    ("template data", lambda s: task(s)["Templates"][0].update(EmbeddedTmpl="b"), ["web", "server", "Template"],
     {("Edited", "EmbeddedTmpl", "a", "b")}),
    ("template wait", lambda s: task(s)["Templates"][0].update(Wait={"Min": SECOND, "Max": 5 * SECOND}),
     ["web", "server", "Template", "Template"], {("Added", "Min", "", "1000000000"), ("Added", "Max", "", "5000000000")}),
    ("artifact source", lambda s: task(s)["Artifacts"][0].update(GetterSource="https://example.com/v2.tgz"),
     ["web", "server", "Artifact"], {("Edited", "GetterSource", "https://example.com/app.tgz", "https://example.com/v2.tgz")}),
    ("artifact option", lambda s: task(s)["Artifacts"][0].update(GetterOptions={"archive": "false"}),
     ["web", "server", "Artifact"], {("Added", "GetterOptions[archive]", "", "false")}),
    ("volume read-only", lambda s: group(s)["Volumes"]["data"].update(ReadOnly=True), ["web", "Volume"],
     {("Edited", "ReadOnly", "false", "true")}),
    ("volume added", lambda s: group(s)["Volumes"].update(logs={"Name": "logs", "Type": "host", "Source": "logs"}),
     ["web", "Volume:Added"], {("Added", "Name", "", "logs"), ("Added", "Type", "", "host"), ("Added", "Source", "", "logs"),
      ("Added", "ReadOnly", "", "false"), ("Added", "Sticky", "", "false"), ("Added", "PerAlloc", "", "false")}),
    ("volume mount", lambda s: task(s)["VolumeMounts"][0].update(Destination="/data"), ["web", "server", "VolumeMount"],
     {("Edited", "Destination", "/srv", "/data")}),
    ("lifecycle", lambda s: group(s)["Tasks"][1]["Lifecycle"].update(Hook="poststart", Sidecar=True),
     ["web", "init", "Lifecycle"], {("Edited", "Hook", "prestart", "poststart"), ("Edited", "Sidecar", "false", "true")}),
    ("scaling max", lambda s: group(s)["Scaling"].update(Max=10), ["web", "Scaling"], {("Edited", "Max", "5", "10")}),
    ("scaling policy", lambda s: group(s)["Scaling"].update(Policy={"cooldown": "1m", "check": {"cpu": {"q": "x"}}}),
     ["web", "Scaling", "Policy"], {("Added", "cooldown", "", "1m"), ("Added", "check[cpu][q]", "", "x")}),
    ("vault role", lambda s: task(s)["Vault"].update(Role="api"), ["web", "server", "Vault"], {("Edited", "Role", "web", "api")}),
    ("identity audience", lambda s: task(s)["Identities"][0].update(Audience=["vault.io"]),
     ["web", "server", "Identity", "Audience"], {("Added", "Audience", "", "vault.io"), ("Deleted", "Audience", "consul.io", "")}),
    ("task network", lambda s: task(s).update(Resources={"Networks": [{"DynamicPorts": [{"Label": "own"}]}]}),
     ["web", "server", "Resources", "Network", "Dynamic Port"], {("Added", "Label", "", "own"), ("Added", "To", "", "0"),
      ("Added", "HostNetwork", "", "default")}),
    ("group consul", lambda s: group(s).update(Consul={"Namespace": "ops"}), ["web", "Consul"],
     {("Added", "Namespace", "", "ops")}),
    ("ui", lambda s: s.update(UI={"Description": "web", "Links": [{"Label": "docs", "URL": "https://d"}]}),
     ["UI", "Link"], {("Added", "Label", "", "docs"), ("Added", "URL", "", "https://d")}),
]  # fmt: skip


@pytest.mark.parametrize(("change", "path", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_block_change_shows_where_nomad_shows_it(
    change: Callable[[Spec], None], path: list[str], shown: set[tuple[str, str, str, str]]
) -> None:
    d = job_diff(job(_BASE), edited(change)).to_api()
    assert d["Type"] == "Edited"
    assert _changes(_at(d, path)) == shown


def test_an_unchanged_job_with_every_block_has_no_diff() -> None:
    d = job_diff(job(_BASE), job(copy.deepcopy(_BASE))).to_api()
    assert d["Type"] == "None" and d["Objects"] is None
    (g,) = d["TaskGroups"]
    assert g["Type"] == "None" and g["Objects"] is None and all(t["Objects"] is None for t in g["Tasks"])


def test_a_changed_network_is_one_deleted_and_one_added_as_nomad_hashes_them() -> None:
    d = job_diff(job(_BASE), edited(lambda s: net(s)["ReservedPorts"][0].update(Value=9091))).to_api()
    networks = _objects(d["TaskGroups"][0], "Network")
    assert [n["Type"] for n in networks] == ["Added", "Deleted"]
    # Each carries every port, static ones first.
    assert [(p["Name"], p["Type"]) for p in networks[0]["Objects"]] == [
        ("Static Port", "Added"),
        ("Dynamic Port", "Added"),
    ]


def test_services_are_matched_by_name_and_port_when_there_are_several() -> None:
    def two(s: Spec) -> None:
        group(s)["Services"].append({"Name": "admin", "PortLabel": "admin", "Provider": "nomad"})

    def renamed(s: Spec) -> None:
        two(s)
        group(s)["Services"].reverse()
        group(s)["Services"][0]["Tags"] = ["ops"]

    d = job_diff(edited(two), edited(renamed)).to_api()
    (svc,) = _objects(d["TaskGroups"][0], "Service")
    assert svc["Type"] == "Edited" and _changes(_at(svc, ["Tags"])) == {("Added", "Tags", "", "ops")}


def test_templates_are_matched_by_destination() -> None:
    def two(s: Spec) -> None:
        task(s)["Templates"].append({"EmbeddedTmpl": "x", "DestPath": "local/other"})

    def changed(s: Spec) -> None:
        two(s)
        task(s)["Templates"].reverse()
        task(s)["Templates"][0]["EmbeddedTmpl"] = "y"

    d = job_diff(edited(two), edited(changed)).to_api()
    (tmpl,) = _objects(d["TaskGroups"][0]["Tasks"][1], "Template")
    assert _changes(tmpl) == {("Edited", "EmbeddedTmpl", "x", "y")}


@pytest.mark.parametrize(
    ("change", "notes"),
    [
        (lambda s: task(s)["Templates"][0].update(EmbeddedTmpl="b"), ["forces create/destroy update"]),
        (lambda s: task(s)["Artifacts"][0].update(GetterSource="https://example.com/v2.tgz"), ["forces create/destroy update"]),
        (lambda s: task(s)["VolumeMounts"][0].update(ReadOnly=True), ["forces create/destroy update"]),
        (lambda s: task(s).update(Services=[{"Name": "api", "Provider": "nomad"}]), ["forces in-place update"]),
    ],
    ids=["template", "artifact", "volume mount", "service"],
)  # fmt: skip
def test_the_plan_annotates_task_blocks_as_nomad_does(
    change: Callable[[Spec], None], notes: list[str]
) -> None:
    d = plan_diff(job(_BASE), edited(change), {"web": DesiredUpdates(ignore=2)})
    (server,) = _objects(d["TaskGroups"][0], "server")
    assert server["Annotations"] == notes
