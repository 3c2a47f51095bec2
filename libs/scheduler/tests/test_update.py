"""Which edits replace a group's allocs (destructive) and which they take in place, as Nomad's
tasksUpdated decides: a row per block."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.scheduler.update import tasks_updated

Spec = dict[str, Any]
SECOND = 1_000_000_000

_BASE: Spec = {
    "ID": "web",
    "Meta": {"team": "a"},
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
            "Services": [{"Name": "web", "PortLabel": "http", "Provider": "nomad", "Tags": ["v1"]}],
            "Volumes": {"data": {"Name": "data", "Type": "host", "Source": "data"}},
            "Scaling": {"Min": 1, "Max": 5},
            "Tasks": [
                {
                    "Name": "server",
                    "Driver": "mock",
                    "Config": {"run_for": "1h"},
                    "VolumeMounts": [{"Volume": "data", "Destination": "/srv"}],
                    "Artifacts": [{"GetterSource": "https://example.com/app.tgz", "RelativeDest": "local/app"}],
                    "Templates": [{"EmbeddedTmpl": "a", "DestPath": "local/app.env"}],
                    "Vault": {"Role": "web"},
                    "Identities": [{"Name": "consul", "Audience": ["consul.io"]}],
                },
                {"Name": "init", "Driver": "mock", "Lifecycle": {"Hook": "prestart"}},
            ],
        }
    ],
}  # fmt: skip


def group(s: Spec) -> Spec:
    g: Spec = s["TaskGroups"][0]
    return g


def task(s: Spec) -> Spec:
    t: Spec = group(s)["Tasks"][0]
    return t


def net(s: Spec) -> Spec:
    n: Spec = group(s)["Networks"][0]
    return n


DESTRUCTIVE = [
    ("static port value", lambda s: net(s)["ReservedPorts"][0].update(Value=9091)),
    ("port label", lambda s: net(s)["DynamicPorts"][0].update(Label="web")),
    ("port mapped to", lambda s: net(s)["DynamicPorts"][0].update(To=8081)),
    ("port added", lambda s: net(s)["DynamicPorts"].append({"Label": "metrics"})),
    ("port host network", lambda s: net(s)["ReservedPorts"][0].update(HostNetwork="public")),
    ("network mode", lambda s: net(s).update(Mode="bridge")),
    ("network hostname", lambda s: net(s).update(Hostname="web")),
    ("network dns", lambda s: net(s).update(DNS={"Servers": ["1.1.1.1"]})),
    ("network removed", lambda s: group(s).update(Networks=[], Services=[])),
    ("task network", lambda s: task(s).update(Resources={"Networks": [{"DynamicPorts": [{"Label": "own"}]}]})),
    ("volume source", lambda s: group(s)["Volumes"]["data"].update(Source="other")),
    ("volume added", lambda s: group(s)["Volumes"].update(logs={"Name": "logs", "Type": "host", "Source": "l"})),
    ("volume mount", lambda s: task(s)["VolumeMounts"][0].update(ReadOnly=True)),
    ("artifact", lambda s: task(s)["Artifacts"][0].update(GetterSource="https://example.com/v2.tgz")),
    ("artifact added", lambda s: task(s)["Artifacts"].append({"GetterSource": "https://e.com/b", "RelativeDest": "local/b"})),
    ("template", lambda s: task(s)["Templates"][0].update(EmbeddedTmpl="b")),
    ("template change mode", lambda s: task(s)["Templates"][0].update(ChangeMode="noop")),
    ("vault", lambda s: task(s)["Vault"].update(Role="api")),
    ("identity", lambda s: task(s)["Identities"][0].update(Audience=["vault.io"])),
    ("secret", lambda s: task(s).update(Secrets=[{"Name": "db", "Provider": "nomad", "Path": "db"}])),
    ("task consul namespace", lambda s: task(s).update(Consul={"Namespace": "ops"})),
    ("group consul namespace", lambda s: group(s).update(Consul={"Namespace": "ops"})),
    ("render templates", lambda s: group(s).update(RestartPolicy={"RenderTemplates": True})),
    ("task render templates", lambda s: task(s).update(RestartPolicy={"RenderTemplates": True})),
    ("logs disabled", lambda s: task(s).update(LogConfig={"Disabled": True})),
    ("config", lambda s: task(s)["Config"].update(run_for="2h")),
    ("env", lambda s: task(s).update(Env={"A": "1"})),
    ("ephemeral disk", lambda s: group(s).update(EphemeralDisk={"SizeMB": 500})),
    ("job meta", lambda s: s["Meta"].update(team="b")),
    ("task added", lambda s: group(s)["Tasks"].append({"Name": "side", "Driver": "mock"})),
]  # fmt: skip

IN_PLACE = [
    ("count", lambda s: group(s).update(Count=3)),
    ("service tags", lambda s: group(s)["Services"][0]["Tags"].append("v2")),
    ("service added", lambda s: task(s).update(Services=[{"Name": "api", "Provider": "nomad"}])),
    ("scaling", lambda s: group(s)["Scaling"].update(Max=10)),
    ("restart attempts", lambda s: group(s).update(RestartPolicy={"Attempts": 5})),
    ("log sizes", lambda s: task(s).update(LogConfig={"MaxFiles": 3})),
    ("constraint", lambda s: group(s).update(Constraints=[{"LTarget": "${node.class}", "RTarget": "x"}])),
    ("update block", lambda s: group(s).update(Update={"MaxParallel": 2})),
    ("consul cluster alone", lambda s: group(s).update(Consul={"Cluster": "default"})),
]  # fmt: skip


def _jobs(change: Callable[[Spec], None]) -> tuple[Job, Job]:
    new = copy.deepcopy(_BASE)
    change(new)
    return canonicalize(Job.model_validate(new)), canonicalize(Job.model_validate(_BASE))


@pytest.mark.parametrize("change", [c[1] for c in DESTRUCTIVE], ids=[c[0] for c in DESTRUCTIVE])
def test_a_destructive_change_replaces_the_allocs(change: Callable[[Spec], None]) -> None:
    new, old = _jobs(change)
    assert tasks_updated(new, old, "web")


@pytest.mark.parametrize("change", [c[1] for c in IN_PLACE], ids=[c[0] for c in IN_PLACE])
def test_an_in_place_change_keeps_the_allocs(change: Callable[[Spec], None]) -> None:
    new, old = _jobs(change)
    assert not tasks_updated(new, old, "web")


def test_the_same_job_is_not_updated() -> None:
    new, old = _jobs(lambda s: None)
    assert not tasks_updated(new, old, "web")
