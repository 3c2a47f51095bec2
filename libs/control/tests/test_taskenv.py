"""A task's environment as Nomad's task environment builder makes it (drover.control.client.
taskenv), and its host volume mounts (drover.control.client.volumes)."""

from __future__ import annotations

from typing import Any

import pytest

from drover.control.client.taskenv import (
    TaskDirs,
    clean_env_var,
    core_ranges,
    interpolate,
    node_attributes,
    port_env,
    replace_env,
    task_env,
)
from drover.control.client.volumes import HostVolumeMount, VolumeError, host_volume_mounts, volume_env
from drover.model.alloc import Allocation
from drover.model.allocated import (
    AllocatedCpuResources,
    AllocatedMemoryResources,
    AllocatedResources,
    AllocatedSharedResources,
    AllocatedTaskResources,
)
from drover.model.job import Job, ParameterizedJobConfig, Resources, Task, TaskGroup
from drover.model.network import AllocatedPortMapping, NetworkResource, Port
from drover.model.node import Node
from drover.model.volumes import ClientHostVolumeConfig, VolumeMount, VolumeRequest

DIRS = TaskDirs("/a/alloc", "/a/web/local", "/a/web/secrets")
NODE = Node(
    id="node-1",
    name="n1",
    datacenter="dc2",
    node_class="gpu",
    node_pool="pool-a",
    attributes={"kernel.name": "linux"},
    meta={"rack": "r7"},
)


def job(**kw: Any) -> Job:
    task = Task(name="web", driver="raw_exec", meta={"owner": "task"}, **kw.pop("task", {}))
    tg = TaskGroup(name="g", tasks=[task], meta={"tier": "group", "owner": "group"})
    return Job(
        id="shop", name="Shop", parent_id="", meta={"team": "job", "tier": "job"}, task_groups=[tg], **kw
    )


def alloc(**kw: Any) -> Allocation:
    return Allocation(
        id="0f1e2d3c-aaaa-bbbb-cccc-000000000000", name="shop.g[2]", namespace="prod", task_group="g", **kw
    )


def env_of(j: Job | None = None, a: Allocation | None = None, **hook: str) -> dict[str, str]:
    j = j or job()
    return task_env(a or alloc(), j, j.task_groups[0].tasks[0], NODE, DIRS, "europe", hook)


def test_the_alloc_job_and_node_variables() -> None:
    env = env_of()
    assert {k: v for k, v in env.items() if not k.startswith("NOMAD_META_")} == {
        "NOMAD_ALLOC_DIR": "/a/alloc",
        "NOMAD_TASK_DIR": "/a/web/local",
        "NOMAD_SECRETS_DIR": "/a/web/secrets",
        "NOMAD_ALLOC_ID": "0f1e2d3c-aaaa-bbbb-cccc-000000000000",
        "NOMAD_SHORT_ALLOC_ID": "0f1e2d3c",
        "NOMAD_ALLOC_NAME": "shop.g[2]",
        "NOMAD_ALLOC_INDEX": "2",
        "NOMAD_GROUP_NAME": "g",
        "NOMAD_TASK_NAME": "web",
        "NOMAD_JOB_ID": "shop",
        "NOMAD_JOB_NAME": "Shop",
        "NOMAD_DC": "dc2",
        "NOMAD_NAMESPACE": "prod",
        "NOMAD_REGION": "europe",
        # the task's resources when the alloc carries no AllocatedResources (100 MHz, 300 MB)
        "NOMAD_CPU_LIMIT": "100",
        "NOMAD_MEMORY_LIMIT": "300",
    }
    # a child job names its parent
    assert env_of(job().model_copy(update={"parent_id": "shop-base"}))["NOMAD_JOB_PARENT_ID"] == "shop-base"


@pytest.mark.parametrize(
    ("task_resources", "allocated", "expected"),
    [
        (Resources(cpu=500, memory_mb=256), None, {"NOMAD_CPU_LIMIT": "500", "NOMAD_MEMORY_LIMIT": "256"}),
        (
            Resources(cpu=500, memory_mb=256, memory_max_mb=512),
            None,
            {"NOMAD_CPU_LIMIT": "500", "NOMAD_MEMORY_LIMIT": "256", "NOMAD_MEMORY_MAX_LIMIT": "512"},
        ),
        # what the alloc was given wins over what the task asked for
        (
            Resources(cpu=500, memory_mb=256),
            AllocatedTaskResources(
                cpu=AllocatedCpuResources(cpu_shares=2000, reserved_cores=[0, 1, 2, 5]),
                memory=AllocatedMemoryResources(memory_mb=1024, memory_max_mb=2048),
            ),
            {
                "NOMAD_CPU_LIMIT": "2000",
                "NOMAD_CPU_CORES": "0-2,5",
                "NOMAD_MEMORY_LIMIT": "1024",
                "NOMAD_MEMORY_MAX_LIMIT": "2048",
            },
        ),
    ],
)
def test_resource_limits(
    task_resources: Resources, allocated: AllocatedTaskResources | None, expected: dict[str, str]
) -> None:
    j = job(task={"resources": task_resources})
    res = AllocatedResources(tasks={"web": allocated}) if allocated is not None else None
    env = env_of(j, alloc(allocated_resources=res))
    assert {k: v for k, v in env.items() if "LIMIT" in k or "CORES" in k} == expected


def test_meta_merged_task_over_group_over_job_as_written_and_upper_cased() -> None:
    env = env_of()
    assert {k: v for k, v in env.items() if k.startswith("NOMAD_META_")} == {
        "NOMAD_META_team": "job", "NOMAD_META_TEAM": "job",
        "NOMAD_META_tier": "group", "NOMAD_META_TIER": "group",
        "NOMAD_META_owner": "task", "NOMAD_META_OWNER": "task",
    }  # fmt: skip
    # a dispatched child has its optional meta keys even when the dispatch did not set them;
    # a key a shell cannot name is cleaned
    child = job(dispatched=True, parameterized_job=ParameterizedJobConfig(meta_optional=["run-id"]))
    env = env_of(child)
    assert env["NOMAD_META_run_id"] == "" and env["NOMAD_META_RUN_ID"] == ""


HTTP = AllocatedPortMapping(label="http", value=24567, to=0, host_ip="10.0.0.5")
ADMIN = AllocatedPortMapping(label="admin", value=80, to=-1, host_ip="10.0.0.5")
MAPPED = AllocatedPortMapping(label="db", value=25000, to=5432, host_ip="10.0.0.5")
V6 = AllocatedPortMapping(label="v6", value=20001, to=0, host_ip="fd00::2")


def _port(label: str, host: str, ip: str, bind: str) -> dict[str, str]:
    return {
        f"NOMAD_ADDR_{label}": f"{ip}:{host}",
        f"NOMAD_HOST_ADDR_{label}": f"{ip}:{host}",
        f"NOMAD_IP_{label}": ip.strip("[]"),
        f"NOMAD_HOST_IP_{label}": ip.strip("[]"),
        f"NOMAD_PORT_{label}": bind,
        f"NOMAD_ALLOC_PORT_{label}": bind,
        f"NOMAD_HOST_PORT_{label}": host,
    }


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        # host mode: `to` 0 or -1 means the task binds the host port
        ([HTTP], _port("http", "24567", "10.0.0.5", "24567")),
        ([ADMIN], _port("admin", "80", "10.0.0.5", "80")),
        # a mapped port: the task is told the port it binds, the address stays the host's
        ([MAPPED], _port("db", "25000", "10.0.0.5", "5432")),
        ([V6], _port("v6", "20001", "[fd00::2]", "20001")),
        (
            [HTTP, MAPPED],
            {**_port("http", "24567", "10.0.0.5", "24567"), **_port("db", "25000", "10.0.0.5", "5432")},
        ),
        ([], {}),
    ],
)
def test_port_variables_of_the_alloc_ports(
    ports: list[AllocatedPortMapping], expected: dict[str, str]
) -> None:
    res = AllocatedResources(shared=AllocatedSharedResources(ports=ports))
    assert port_env(res, "web") == expected
    env = env_of(a=alloc(allocated_resources=res))
    assert {k: v for k, v in env.items() if k in expected} == expected
    # host mode has no network status: no NOMAD_ALLOC_IP_* or NOMAD_ALLOC_ADDR_*
    assert not [k for k in env if k.startswith(("NOMAD_ALLOC_IP_", "NOMAD_ALLOC_ADDR_"))]


def test_port_variables_of_group_and_other_tasks_networks() -> None:
    group_net = NetworkResource(
        ip="10.0.0.5",
        reserved_ports=[Port(label="http", value=80, to=8080)],
        dynamic_ports=[Port(label="metrics", value=21000)],
    )
    other = NetworkResource(ip="10.0.0.5", dynamic_ports=[Port(label="rpc", value=22000)])
    res = AllocatedResources(
        tasks={"web": AllocatedTaskResources(), "sidecar": AllocatedTaskResources(networks=[other])},
        shared=AllocatedSharedResources(networks=[group_net], ports=[HTTP]),
    )
    env = port_env(res, "web")
    assert env["NOMAD_PORT_metrics"] == "21000" and env["NOMAD_HOST_PORT_metrics"] == "21000"
    # the alloc's port mapping is laid over the group network's
    assert env["NOMAD_PORT_http"] == "24567" and env["NOMAD_HOST_PORT_http"] == "24567"
    assert env["NOMAD_ADDR_sidecar_rpc"] == "10.0.0.5:22000"
    assert env["NOMAD_IP_sidecar_rpc"] == "10.0.0.5" and env["NOMAD_PORT_sidecar_rpc"] == "22000"


@pytest.mark.parametrize(
    ("task_env_in", "expected"),
    [
        ({"LISTEN": "${NOMAD_ADDR_http}"}, {"LISTEN": "10.0.0.5:24567"}),
        ({"KERNEL": "${attr.kernel.name}-${meta.rack}"}, {"KERNEL": "linux-r7"}),
        (
            {"WHO": "${node.unique.id}/${node.unique.name}/${node.datacenter}/${node.class}"},
            {"WHO": "node-1/n1/dc2/gpu"},
        ),
        ({"WHERE": "${node.region}:${node.pool}"}, {"WHERE": "europe:pool-a"}),
        ({"OWNER": "${NOMAD_META_owner}"}, {"OWNER": "task"}),
        ({"UNKNOWN": "${nope} and $HOME"}, {"UNKNOWN": "${nope} and $HOME"}),  # left as written
        ({"NOMAD_TASK_NAME": "mine"}, {"NOMAD_TASK_NAME": "mine"}),  # the task's env wins
    ],
)
def test_the_tasks_env_is_interpolated(task_env_in: dict[str, str], expected: dict[str, str]) -> None:
    res = AllocatedResources(shared=AllocatedSharedResources(ports=[HTTP]))
    env = env_of(job(task={"env": task_env_in}), alloc(allocated_resources=res))
    assert {k: env[k] for k in expected} == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${A}", "1"),
        ("x${A}y${B.c}z", "x1y2z"),
        ("${A-b}", "3"),
        ("${missing}", "${missing}"),
        ("${ A }", "${ A }"),  # spaces are not part of a name: left as written
        ("$A", "$A"),
        ("", ""),
    ],
)
def test_replace_env(text: str, expected: str) -> None:
    assert replace_env(text, {"A": "1", "A-b": "3"}, {"B.c": "2", "A": "shadowed"}) == expected


def test_a_driver_config_is_interpolated_throughout() -> None:
    config = {
        "command": "${NOMAD_TASK_DIR}/run",
        "args": ["-p", "${NOMAD_PORT_http}", 3],
        "opts": {"k": ["${x}"]},
    }
    assert interpolate(config, {"NOMAD_TASK_DIR": "/t", "NOMAD_PORT_http": "80"}) == {
        "command": "/t/run",
        "args": ["-p", "80", 3],
        "opts": {"k": ["${x}"]},
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [("NOMAD_META_a-b", "NOMAD_META_a_b"), ("NOMAD_META_a.b", "NOMAD_META_a.b"), ("9lives", "_lives"),
     ("x9", "x9"), ("é", "_")],
)  # fmt: skip
def test_clean_env_var(name: str, expected: str) -> None:
    assert clean_env_var(name) == expected


@pytest.mark.parametrize(
    ("cores", "expected"),
    [([0], "0"), ([3, 1, 2], "1-3"), ([0, 2, 4], "0,2,4"), ([0, 1, 5, 6, 9], "0-1,5-6,9")],
)
def test_core_ranges(cores: list[int], expected: str) -> None:
    assert core_ranges(cores) == expected


def test_node_attributes_name_what_interpolation_reaches() -> None:
    attrs = node_attributes(NODE, "global")
    assert attrs["attr.kernel.name"] == "linux" and attrs["meta.rack"] == "r7"
    assert attrs["node.region"] == "global" and attrs["node.unique.id"] == "node-1"


# --- host volumes ---
HOST = {
    "data": ClientHostVolumeConfig(name="data", path="/srv/data"),
    "certs": ClientHostVolumeConfig(name="certs", path="/etc/certs", read_only=True),
    "cache[2]": ClientHostVolumeConfig(name="cache[2]", path="/srv/cache2"),
}


@pytest.mark.parametrize(
    ("volumes", "mounts", "expected"),
    [
        (
            {"d": VolumeRequest(type="host", source="data")},
            [VolumeMount(volume="d", destination="/data")],
            [HostVolumeMount("d", "/srv/data", "/data", False)],
        ),
        # read-only when the node's volume, the request or the mount says so
        (
            {"c": VolumeRequest(type="host", source="certs")},
            [VolumeMount(volume="c", destination="/certs")],
            [HostVolumeMount("c", "/etc/certs", "/certs", True)],
        ),
        (
            {"d": VolumeRequest(type="host", source="data", read_only=True)},
            [VolumeMount(volume="d", destination="/data")],
            [HostVolumeMount("d", "/srv/data", "/data", True)],
        ),
        (
            {"d": VolumeRequest(type="host", source="data")},
            [VolumeMount(volume="d", destination="/data", read_only=True)],
            [HostVolumeMount("d", "/srv/data", "/data", True)],
        ),
        # per_alloc: the source carries the alloc's index
        (
            {"k": VolumeRequest(type="host", source="cache", per_alloc=True)},
            [VolumeMount(volume="k", destination="/cache")],
            [HostVolumeMount("k", "/srv/cache2", "/cache", False)],
        ),
        # a CSI volume's mount is not a host volume's
        (
            {"c": VolumeRequest(type="csi", source="ebs")},
            [VolumeMount(volume="c", destination="/ebs")],
            [],
        ),
        # a group volume the task does not mount is checked, not mounted
        ({"d": VolumeRequest(type="host", source="data")}, [], []),
    ],
)
def test_host_volume_mounts(
    volumes: dict[str, VolumeRequest], mounts: list[VolumeMount], expected: list[HostVolumeMount]
) -> None:
    task = Task(name="web", volume_mounts=mounts)
    tg = TaskGroup(name="g", tasks=[task], volumes=volumes)
    assert host_volume_mounts(task, tg, HOST, "shop.g[2]") == expected


def test_a_missing_host_volume_is_named_and_the_path_reaches_the_env() -> None:
    task = Task(name="web", volume_mounts=[VolumeMount(volume="d", destination="/data")])
    tg = TaskGroup(
        name="g",
        tasks=[task],
        volumes={
            "d": VolumeRequest(type="host", source="data"),
            "x": VolumeRequest(type="host", source="nope"),
        },
    )
    with pytest.raises(VolumeError, match="missing host volume nope"):
        host_volume_mounts(task, tg, HOST, "shop.g[0]")
    mounts = [HostVolumeMount("my-data", "/srv/data", "/data", False)]
    assert volume_env(mounts) == {"DROVER_VOLUME_my_data": "/srv/data"}
    j = job()
    env = task_env(alloc(), j, j.task_groups[0].tasks[0], NODE, DIRS, "global", volume_env(mounts))
    assert env["DROVER_VOLUME_my_data"] == "/srv/data"
