"""What a job holds that Drover keeps but does not carry out, and Nomad's own warnings."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Job
from drover.model.jobwarnings import job_warnings

KEPT = "is kept but not carried out"


def _job(group: dict[str, Any] | None = None, task: dict[str, Any] | None = None, **job: Any) -> Job:
    tg = {
        "Name": "web",
        "Count": 2,
        "Tasks": [{"Name": "srv", "Driver": "raw_exec", **(task or {})}],
        **(group or {}),
    }
    return Job.model_validate({"ID": "app", "TaskGroups": [tg], **job})


@pytest.mark.parametrize(
    ("job", "want"),
    [
        # What Drover carries out says nothing.
        (_job(), []),
        (_job({"Networks": [{"DynamicPorts": [{"Label": "http"}]}]}), []),
        (_job({"Volumes": {"d": {"Type": "host", "Source": "d"}}}, {"VolumeMounts": [{"Volume": "d"}]}), []),
        (_job(None, {"Lifecycle": {"Hook": "prestart"}, "Artifacts": [{"GetterSource": "http://h/a"}]}), []),
        (_job({"Scaling": {"Min": 1, "Max": 4}}), []),
        # What it only keeps is named where it is.
        # Services of provider nomad are registered; Consul's (the default) only kept.
        (_job({"Services": [{"Name": "web", "Provider": "nomad"}]}), []),
        (_job(None, {"Services": [{"Name": "api", "Provider": "nomad"}]}), []),
        (
            _job({"Services": [{"Name": "web"}]}),
            [
                f'group "web": Services of provider consul {KEPT}: Drover has no Consul (provider nomad registers them)'
            ],
        ),
        (
            _job(None, {"Services": [{"Name": "api", "Provider": "consul"}]}),
            [f'group "web": task "srv": Services of provider consul {KEPT}'],
        ),
        # Templates are rendered and watched; a field the agent does not act on is named.
        (_job(None, {"Templates": [{"EmbeddedTmpl": "x"}]}), []),
        (
            _job(
                None,
                {
                    "Templates": [
                        {
                            "EmbeddedTmpl": "x",
                            "Uid": 1000,
                            "Gid": 1000,
                            "Once": True,
                            "Wait": {"Min": 1, "Max": 2},
                        }
                    ]
                },
            ),
            [],
        ),
        (
            _job(
                None,
                {
                    "Templates": [
                        {
                            "EmbeddedTmpl": "x",
                            "VaultGrace": 5,
                            "ChangeScript": {"Command": "x", "RunOnFirstRender": True},
                        }
                    ]
                },
            ),
            [
                f'group "web": task "srv": template 0: VaultGrace {KEPT}',
                f'group "web": task "srv": template 0: ChangeScript.RunOnFirstRender {KEPT}',
            ],
        ),
        (_job(None, {"Vault": {"Policies": ["p"]}}), [f'group "web": task "srv": Vault {KEPT}']),
        (_job(None, {"Identities": [{"Name": "x"}]}), [f'group "web": task "srv": Identity {KEPT}']),
        (
            _job({"Volumes": {"d": {"Type": "csi", "Source": "d"}}}),
            [f'group "web": volume "d" of type csi {KEPT}: Drover has no CSI plugins'],
        ),
        # Served to the autoscaler at /v1/scaling/policies: carried out as Nomad does.
        (_job({"Scaling": {"Max": 4, "Policy": {"check": {}}}}), []),
        (_job(Multiregion={"Regions": [{"Name": "east"}]}), [f"Multiregion {KEPT}: Drover runs one region"]),
        (
            _job(None, {"Resources": {"CPU": 100, "Devices": [{"Name": "gpu"}]}}),
            [f'group "web": task "srv": Resources.Devices {KEPT}'],
        ),
        # Nomad's own warnings.
        (
            _job({"Update": {"MaxParallel": 3}}),
            [
                'group "web": Update max parallel count is greater than task group count (3 > 2). A destructive '
                "change would result in the simultaneous replacement of all allocations."
            ],
        ),
        (
            _job({"MaxClientDisconnect": 10}),
            ['group "web": MaxClientDisconnect is deprecated and carried out as Disconnect.LostAfter'],
        ),
        (
            _job({"MaxClientDisconnect": 10, "Disconnect": {"LostAfter": 5}}),
            ['group "web": MaxClientDisconnect is deprecated and ignored in favor of Disconnect.LostAfter'],
        ),
        (
            _job({"Networks": [{"MBits": 10}]}),
            ['group "web": mbits has been deprecated as of Nomad 0.12.0 and is ignored'],
        ),
    ],
)
def test_job_warnings(job: Job, want: list[str]) -> None:
    assert job_warnings(job) == want


def _docker(**config: Any) -> Job:
    return _job(None, {"Driver": "docker", "Config": {"image": "redis", **config}})


@pytest.mark.parametrize(
    ("job", "want"),
    [
        # What the docker driver carries out says nothing.
        (_docker(), []),
        (
            _docker(ports=["http"], volumes=["a:/a"], devices=[{"host_path": "/dev/fuse"}], force_pull=True),
            [],
        ),
        (_docker(logging=[{"type": "json-file", "config": [{"max-size": "1m"}]}]), []),
        # A key set to nothing asks for nothing.
        (_docker(network_aliases=[], auth_soft_fail=False, cpuset_cpus=""), []),
        (
            _docker(devices=[], network_aliases=["db"], ipv4_address="10.0.0.9", port_map=[{"http": 80}]),
            [
                f'group "web": task "srv": config "{key}" of driver docker {KEPT}'
                for key in ("ipv4_address", "network_aliases", "port_map")
            ],
        ),
        (
            _docker(load="img.tar", auth_soft_fail=True, advertise_ipv6_address=True, cpuset_cpus="0-1"),
            [
                f'group "web": task "srv": config "{key}" of driver docker {KEPT}'
                for key in ("advertise_ipv6_address", "auth_soft_fail", "cpuset_cpus", "load")
            ],
        ),
        (
            _docker(logging={"type": "syslog", "config": {"tag": "x"}}),
            [
                f'group "web": task "srv": config "logging" of type "syslog" of driver docker {KEPT}: '
                "the output goes to the task's log files"
            ],
        ),
        (
            _docker(logging=[{"driver": "fluentd"}]),
            [
                f'group "web": task "srv": config "logging" of type "fluentd" of driver docker {KEPT}: '
                "the output goes to the task's log files"
            ],
        ),
        # Another driver's config is not read as docker's.
        (_job(None, {"Driver": "raw_exec", "Config": {"command": "x", "load": "y"}}), []),
    ],
)
def test_docker_config_warnings(job: Job, want: list[str]) -> None:
    assert job_warnings(job) == want
