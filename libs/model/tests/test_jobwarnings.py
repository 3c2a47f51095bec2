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
        (
            _job({"Services": [{"Name": "web"}]}),
            [f'group "web": Services {KEPT}: Drover does not register services yet'],
        ),
        (_job(None, {"Templates": [{"EmbeddedTmpl": "x"}]}), [f'group "web": task "srv": Templates {KEPT}']),
        (_job(None, {"Vault": {"Policies": ["p"]}}), [f'group "web": task "srv": Vault {KEPT}']),
        (_job(None, {"Identities": [{"Name": "x"}]}), [f'group "web": task "srv": Identity {KEPT}']),
        (
            _job({"Volumes": {"d": {"Type": "csi", "Source": "d"}}}),
            [f'group "web": volume "d" of type csi {KEPT}: Drover has no CSI plugins'],
        ),
        (
            _job({"Scaling": {"Max": 4, "Policy": {"check": {}}}}),
            [f'group "web": Scaling policy {KEPT}: no autoscaler reads it yet'],
        ),
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
