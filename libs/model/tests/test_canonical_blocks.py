"""Canonical forms of the inner blocks (networks, services, checks, templates, artifacts,
volume mounts, vault, scaling, CSI plugins, the deprecated disconnect fields), as Nomad fills
them on register."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.durations import SECOND


def canon(group: dict[str, Any] | None = None, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """The canonical group (as JSON) of a job with one group "web" and one task "srv"."""
    tg = {"Name": "web", "Tasks": [{"Name": "srv", "Driver": "raw_exec", **(task or {})}], **(group or {})}
    job = canonicalize(Job.model_validate({"ID": "app", "TaskGroups": [tg]}))
    out: dict[str, Any] = job.to_api()["TaskGroups"][0]
    return out


def _get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


@pytest.mark.parametrize(
    ("group", "task", "path", "want"),
    [
        # Ports live on the default host network unless they name one.
        (
            {"Networks": [{"DynamicPorts": [{"Label": "http"}]}]},
            None,
            "Networks.0.DynamicPorts.0.HostNetwork",
            "default",
        ),
        (
            {"Networks": [{"ReservedPorts": [{"Label": "a", "Value": 9900, "HostNetwork": "public"}]}]},
            None,
            "Networks.0.ReservedPorts.0.HostNetwork",
            "public",
        ),
        # A service is named after its job, group and task; Nomad's defaults fill the rest.
        ({"Services": [{"PortLabel": "http"}]}, None, "Services.0.Name", "app-web"),
        (None, {"Services": [{"PortLabel": "http"}]}, "Tasks.0.Services.0.Name", "app-web-srv"),
        ({"Services": [{"Name": "x"}]}, None, "Services.0.Provider", "consul"),
        ({"Services": [{"Name": "x", "Provider": "nomad"}]}, None, "Services.0.Provider", "nomad"),
        ({"Services": [{"Name": "x"}]}, None, "Services.0.AddressMode", "auto"),
        ({"Services": [{"Name": "x"}]}, None, "Services.0.OnUpdate", "require_healthy"),
        ({"Services": [{"Name": "x", "Weights": {"Passing": 0}}]}, None, "Services.0.Weights.Passing", 1),
        # A check takes its service's on_update and check_restart (grace 1 s by default).
        (
            {"Services": [{"Name": "x", "OnUpdate": "ignore", "Checks": [{"Type": "tcp"}]}]},
            None,
            "Services.0.Checks.0.OnUpdate",
            "ignore",
        ),
        (
            {"Services": [{"Name": "x", "CheckRestart": {"Limit": 3}, "Checks": [{"Type": "tcp"}]}]},
            None,
            "Services.0.Checks.0.CheckRestart",
            {"Limit": 3, "Grace": SECOND, "IgnoreWarnings": False},
        ),
        (
            {
                "Services": [
                    {
                        "Name": "x",
                        "CheckRestart": {"Limit": 3, "Grace": 9 * SECOND},
                        "Checks": [{"Type": "tcp", "CheckRestart": {"Limit": 5}}],
                    }
                ]
            },
            None,
            "Services.0.Checks.0.CheckRestart",
            {"Limit": 5, "Grace": 9 * SECOND, "IgnoreWarnings": False},
        ),
        (
            {"Services": [{"Name": "x", "Checks": [{"Type": "tcp"}]}]},
            None,
            "Services.0.Checks.0.CheckRestart",
            None,
        ),
        # Templates: restart on change, 5 s splay, 0644, {{ }}; a signal mode signals SIGHUP.
        (None, {"Templates": [{"EmbeddedTmpl": "x"}]}, "Tasks.0.Templates.0.ChangeMode", "restart"),
        (None, {"Templates": [{"EmbeddedTmpl": "x"}]}, "Tasks.0.Templates.0.Splay", 5 * SECOND),
        (None, {"Templates": [{"EmbeddedTmpl": "x"}]}, "Tasks.0.Templates.0.Perms", "0644"),
        (None, {"Templates": [{"EmbeddedTmpl": "x"}]}, "Tasks.0.Templates.0.LeftDelim", "{{"),
        (None, {"Templates": [{"ChangeMode": "signal"}]}, "Tasks.0.Templates.0.ChangeSignal", "SIGHUP"),
        (None, {"Templates": [{"ChangeSignal": "sigusr1"}]}, "Tasks.0.Templates.0.ChangeSignal", "SIGUSR1"),
        (None, {"Templates": [{"Splay": 0}]}, "Tasks.0.Templates.0.Splay", 0),
        (
            None,
            {"Templates": [{"ChangeMode": "script", "ChangeScript": {"Command": "/x"}}]},
            "Tasks.0.Templates.0.ChangeScript.Timeout",
            5 * SECOND,
        ),
        # Artifacts land in local/ (a file-mode one under its own name).
        (
            None,
            {"Artifacts": [{"GetterSource": "http://h/a.tgz"}]},
            "Tasks.0.Artifacts.0.RelativeDest",
            "local/",
        ),
        (None, {"Artifacts": [{"GetterSource": "http://h/a.tgz"}]}, "Tasks.0.Artifacts.0.GetterMode", "any"),
        (
            None,
            {"Artifacts": [{"GetterSource": "http://h/x/a.bin?checksum=md5:0", "GetterMode": "file"}]},
            "Tasks.0.Artifacts.0.RelativeDest",
            "local/a.bin",
        ),
        (None, {"VolumeMounts": [{"Volume": "v"}]}, "Tasks.0.VolumeMounts.0.PropagationMode", "private"),
        (None, {"Vault": {"Policies": ["p"]}}, "Tasks.0.Vault.ChangeMode", "restart"),
        (None, {"Vault": {"Policies": ["p"]}}, "Tasks.0.Vault.Cluster", "default"),
        (None, {"Vault": {"Policies": ["p"]}}, "Tasks.0.Vault.Env", True),
        (None, {"CSIPluginConfig": {"ID": "p"}}, "Tasks.0.CSIPluginConfig.MountDir", "/csi"),
        # Scaling: min from the count, horizontal, enabled; a group without a count starts at min.
        (
            {"Count": 3, "Scaling": {"Max": 5}},
            None,
            "Scaling",
            {"Min": 3, "Type": "horizontal", "Enabled": True},
        ),
        ({"Scaling": {"Min": 2, "Max": 5}}, None, "Count", 2),
        ({"Count": 4, "Scaling": {"Min": 2, "Max": 5}}, None, "Count", 4),
        # The deprecated disconnect fields, without a disconnect block, become one.
        ({"MaxClientDisconnect": 60 * SECOND}, None, "Disconnect.LostAfter", 60 * SECOND),
        ({"PreventRescheduleOnLost": True}, None, "Disconnect.Replace", False),
        ({"StopAfterClientDisconnect": 30 * SECOND}, None, "Disconnect.StopOnClientAfter", 30 * SECOND),
        (
            {"MaxClientDisconnect": 60 * SECOND, "Disconnect": {"LostAfter": 10 * SECOND}},
            None,
            "Disconnect.LostAfter",
            10 * SECOND,
        ),
        ({}, None, "Disconnect", None),
    ],
)
def test_block_defaults(
    group: dict[str, Any] | None, task: dict[str, Any] | None, path: str, want: Any
) -> None:
    got = _get(canon(group, task), path)
    if isinstance(want, dict) and isinstance(got, dict):
        got = {k: got[k] for k in want}
    assert got == want


def test_canonical_blocks_are_idempotent() -> None:
    tg = {
        "Name": "web",
        "Networks": [{"DynamicPorts": [{"Label": "http"}], "ReservedPorts": [{"Label": "a", "Value": 9900}]}],
        "Services": [{"PortLabel": "http", "Checks": [{"Type": "http", "Path": "/"}]}],
        "Scaling": {"Max": 3},
        "Volumes": {"data": {"Type": "host", "Source": "data"}},
        "Tasks": [
            {
                "Name": "srv",
                "Templates": [{"EmbeddedTmpl": "x", "ChangeMode": "signal"}],
                "Artifacts": [{"GetterSource": "http://h/a"}],
                "VolumeMounts": [{"Volume": "data", "Destination": "/data"}],
                "Lifecycle": {"Hook": "prestart"},
            }
        ],
    }
    once = canonicalize(Job.model_validate({"ID": "app", "TaskGroups": [tg]}))
    twice = canonicalize(Job.model_validate(once.to_api()))
    assert twice.to_api() == once.to_api()
    assert Job.model_validate(once.to_api()).to_api() == once.to_api()
