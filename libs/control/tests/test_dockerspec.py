"""A docker task's config and what the agent knows, made into the Docker SDK's
`containers.create` keyword arguments as Nomad's docker driver makes a container
(drover.control.client.dockerspec)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from drover.control.client.dockerspec import (
    CARRIED_OUT,
    KEPT_ONLY,
    BindMount,
    ContainerContext,
    ContainerSpecError,
    PortMapping,
    container_labels,
    container_name,
    container_spec,
    cpu_shares,
    memory_limits,
    parse_image,
)
from drover.model.dockerconfig import DOCKER_SCHEMA

ALLOC = "0f1e2d3c-aaaa-bbbb-cccc-000000000000"
ROOT = "/var/drover/allocs/" + ALLOC
MB = 1024 * 1024
CTX = ContainerContext(
    alloc_id=ALLOC,
    job_id="shop",
    job_name="Shop",
    parent_job_id="",
    namespace="prod",
    task_group="web",
    task_name="srv",
    node_id="node-1",
    node_name="n1",
    env={"NOMAD_ALLOC_DIR": "/alloc", "NOMAD_TASK_NAME": "srv"},
    ports=[
        PortMapping("http", "10.0.0.5", 24000, 8080),
        PortMapping("admin", "10.0.0.5", 24001, 0),
        PortMapping("metrics", "10.0.0.5", 24002, 8080),
    ],
    alloc_dir=ROOT + "/alloc",
    task_local_dir=ROOT + "/srv/local",
    task_secrets_dir=ROOT + "/srv/secrets",
    task_dir=ROOT + "/srv",
    host_volumes=[BindMount("/srv/data", "/data", True)],
    cpu_shares=500,
    total_compute=4000,
    memory_mb=256,
    memory_max_mb=0,
    kill_signal="",
    cpu_cores=4,
)


def spec(ctx: ContainerContext = CTX, **config: Any) -> dict[str, Any]:
    return container_spec({"image": "redis:7", **config}, ctx)


def problems(ctx: ContainerContext = CTX, **config: Any) -> list[str]:
    with pytest.raises(ContainerSpecError) as e:
        spec(ctx, **config)
    assert str(e.value) == "; ".join(e.value.problems)
    return e.value.problems


def test_the_keys_carried_out_and_kept_only_are_the_schema() -> None:
    assert set(DOCKER_SCHEMA) == CARRIED_OUT | KEPT_ONLY
    assert not CARRIED_OUT & KEPT_ONLY


def test_a_minimal_task() -> None:
    assert spec() == {
        "image": "redis:7",
        "name": f"srv-{ALLOC}",
        "labels": container_labels(CTX),
        "environment": {"NOMAD_ALLOC_DIR": "/alloc", "NOMAD_TASK_NAME": "srv"},
        "network_mode": "bridge",
        "mounts": [
            {"Type": "bind", "Source": ROOT + "/alloc", "Target": "/alloc", "ReadOnly": False},
            {"Type": "bind", "Source": ROOT + "/srv/local", "Target": "/local", "ReadOnly": False},
            {"Type": "bind", "Source": ROOT + "/srv/secrets", "Target": "/secrets", "ReadOnly": False},
            {"Type": "bind", "Source": ROOT + "/alloc/logs", "Target": "/alloc/logs", "ReadOnly": True},
            {
                "Type": "bind",
                "Source": "/srv/data",
                "Target": "/data",
                "ReadOnly": True,
                "BindOptions": {"Propagation": "rprivate"},
            },
        ],
        "cap_drop": ["NET_RAW"],  # Nomad's default allow_caps lack it
        "cpu_shares": 500,
        "mem_limit": 256 * MB,
        "memswap_limit": 256 * MB,
        "log_config": {"Type": "json-file", "Config": {"max-file": "2", "max-size": "2m"}},
    }


@pytest.mark.parametrize(
    ("task", "alloc_id", "want"),
    [("srv", "a1", "srv-a1"), ("a/b", "a1", "a_b-a1"), ("web-1", ALLOC, f"web-1-{ALLOC}")],
)
def test_container_name(task: str, alloc_id: str, want: str) -> None:
    assert container_name(task, alloc_id) == want


@pytest.mark.parametrize(
    ("ctx", "config", "want"),
    [
        (
            CTX,
            {},
            {
                "com.hashicorp.nomad.alloc_id": ALLOC,
                "com.hashicorp.nomad.job_id": "shop",
                "com.hashicorp.nomad.job_name": "Shop",
                "com.hashicorp.nomad.task_group_name": "web",
                "com.hashicorp.nomad.task_name": "srv",
                "com.hashicorp.nomad.namespace": "prod",
                "com.hashicorp.nomad.node_id": "node-1",
                "com.hashicorp.nomad.node_name": "n1",
            },
        ),
        (
            replace(CTX, parent_job_id="batch"),
            {},
            {"com.hashicorp.nomad.parent_job_id": "batch"},
        ),
        # The user's labels, in each form, and under Nomad's.
        (CTX, {"labels": {"team": "a", "n": 1}}, {"team": "a", "n": "1"}),
        (CTX, {"labels": [{"team": "a"}, {"tier": "b"}]}, {"team": "a", "tier": "b"}),
        (
            CTX,
            {"labels": {"com.hashicorp.nomad.alloc_id": "forged"}},
            {"com.hashicorp.nomad.alloc_id": ALLOC},
        ),
    ],
)
def test_labels(ctx: ContainerContext, config: dict[str, Any], want: dict[str, str]) -> None:
    labels = spec(ctx, **config)["labels"]
    assert want.items() <= labels.items()
    assert ("com.hashicorp.nomad.parent_job_id" in labels) == bool(ctx.parent_job_id)


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("redis", ("redis", "latest")),
        ("redis:7", ("redis", "7")),
        ("library/hello-world:latest", ("library/hello-world", "latest")),
        ("host:5000/library/hello-world", ("host:5000/library/hello-world", "latest")),
        ("host:5000/library/hello-world:1.0", ("host:5000/library/hello-world", "1.0")),
        ("ghcr.io/org/app:v1.2.3-rc1", ("ghcr.io/org/app", "v1.2.3-rc1")),
        ("library/hello-world@sha256:" + "f5" * 32, ("library/hello-world@sha256:" + "f5" * 32, "")),
        # A tag beside a digest is dropped, as Nomad does.
        (
            "my-registry:9090/hello:my-tag@sha256:" + "c7" * 32,
            ("my-registry:9090/hello@sha256:" + "c7" * 32, ""),
        ),
    ],
)
def test_parse_image(image: str, want: tuple[str, str]) -> None:
    assert parse_image(image) == want


@pytest.mark.parametrize("image", ["wrong-docker-image:", "Redis", "a::b", "redis:7 ", ""])
def test_parse_image_refuses(image: str) -> None:
    with pytest.raises(ContainerSpecError, match="does not match registry specification"):
        parse_image(image)


@pytest.mark.parametrize(
    ("config", "want"),
    [
        ({}, {}),
        ({"command": "/bin/app"}, {"command": ["/bin/app"]}),
        ({"command": "/bin/app", "args": ["-v", "x"]}, {"command": ["/bin/app", "-v", "x"]}),
        ({"args": ["-v"]}, {"command": ["-v"]}),
        ({"entrypoint": ["/init"]}, {"entrypoint": ["/init"]}),
        ({"entrypoint": ["/init", "--"], "args": ["x"]}, {"entrypoint": ["/init", "--"], "command": ["x"]}),
        (
            {"entrypoint": ["sh", "-c"], "command": "echo", "args": ["hi"]},
            {"entrypoint": ["sh", "-c"], "command": ["echo", "hi"]},
        ),
        ({"command": "", "args": []}, {}),
    ],
)
def test_command_entrypoint_and_args(config: dict[str, Any], want: dict[str, Any]) -> None:
    got = spec(**config)
    assert {k: got[k] for k in ("entrypoint", "command") if k in got} == want


@pytest.mark.parametrize(
    ("config", "want"),
    [
        ({"ports": ["http"]}, {"8080/tcp": ("10.0.0.5", 24000), "8080/udp": ("10.0.0.5", 24000)}),
        # No `to`: the host's port inside too.
        ({"ports": ["admin"]}, {"24001/tcp": ("10.0.0.5", 24001), "24001/udp": ("10.0.0.5", 24001)}),
        # Two labels onto one port inside: both bound.
        (
            {"ports": ["http", "metrics", "http"]},
            {
                "8080/tcp": [("10.0.0.5", 24000), ("10.0.0.5", 24002)],
                "8080/udp": [("10.0.0.5", 24000), ("10.0.0.5", 24002)],
            },
        ),
        ({"ports": ["http"], "network_mode": "host"}, None),
        ({"ports": ["http"], "network_mode": "none"}, None),
        ({"ports": ["http"], "network_mode": "container:other"}, None),
        ({}, None),
    ],
)
def test_ports(config: dict[str, Any], want: dict[str, Any] | None) -> None:
    got = spec(**config)
    assert got.get("ports") == want
    assert got["network_mode"] == config.get("network_mode", "bridge")


def test_a_port_label_the_alloc_lacks() -> None:
    assert problems(ports=["http", "grpc"]) == ['port label "grpc" not found in the alloc\'s networks']
    assert problems(network_mode="host", ports=["grpc"]) == [
        'port label "grpc" not found in the alloc\'s networks'
    ]


TASK = ROOT + "/srv"


@pytest.mark.parametrize(
    ("ctx", "config", "want"),
    [
        # Relative: in the task's dir; inside the alloc's dir needs nothing.
        (CTX, {"volumes": ["local/conf:/etc/app"]}, {f"{TASK}/local/conf": ("/etc/app", "rw")}),
        (
            CTX,
            {"volumes": ["data:/data:ro", "a:/a:"]},
            {f"{TASK}/data": ("/data", "ro"), f"{TASK}/a": ("/a", "rw")},
        ),
        (CTX, {"volumes": ["../alloc/data:/shared:rw,z"]}, {f"{ROOT}/alloc/data": ("/shared", "rw,z")}),
        (CTX, {"volumes": [f"{ROOT}/alloc/data:/shared"]}, {f"{ROOT}/alloc/data": ("/shared", "rw")}),
        # Outside it: with volumes enabled.
        (replace(CTX, volumes_enabled=True), {"volumes": ["/etc/ssl:/ssl:ro"]}, {"/etc/ssl": ("/ssl", "ro")}),
        (
            replace(CTX, volumes_enabled=True),
            {"volumes": ["../../x:/x"]},
            {"/var/drover/allocs/x": ("/x", "rw")},
        ),
        # A volume driver's source names a volume.
        (
            replace(CTX, volumes_enabled=True),
            {"volumes": ["pgdata:/var/lib/pg"], "volume_driver": "local"},
            {"pgdata": ("/var/lib/pg", "rw")},
        ),
    ],
)
def test_volumes(ctx: ContainerContext, config: dict[str, Any], want: dict[str, tuple[str, str]]) -> None:
    # The SDK's map form of binds: source -> its target and mode.
    assert spec(ctx, **config)["volumes"] == {
        src: {"bind": dst, "mode": mode} for src, (dst, mode) in want.items()
    }


@pytest.mark.parametrize(
    ("config", "want"),
    [
        (
            {"volumes": ["/etc/ssl:/ssl"]},
            ['volumes are not enabled; cannot mount host path: "/etc/ssl:/ssl"'],
        ),
        ({"volumes": ["../../x:/x"]}, ['volumes are not enabled; cannot mount host path: "../../x:/x"']),
        ({"volumes": ["/data"]}, ['invalid docker volume "/data": not <src>:<destination> format']),
        (
            {"volumes": ["local:/a", "./local:/b"]},
            [f'invalid docker volume "./local:/b": "{TASK}/local" is bound already'],
        ),
        (
            {"volumes": ["v:/v"], "volume_driver": "local"},
            ['volumes are not enabled; cannot use volume driver "local"'],
        ),
    ],
)
def test_volumes_refused(config: dict[str, Any], want: list[str]) -> None:
    assert problems(**config) == want


def _mount(**m: Any) -> dict[str, Any]:
    return {"Type": "bind", "ReadOnly": False, **m}


@pytest.mark.parametrize(
    ("ctx", "mounts", "want"),
    [
        (
            CTX,
            [{"type": "bind", "source": "local/x", "target": "/x", "readonly": True}],
            [_mount(Source=f"{TASK}/local/x", Target="/x", ReadOnly=True)],
        ),
        # The jobspec's form: blocks as lists of objects.
        (
            CTX,
            [
                {
                    "type": "bind",
                    "source": "local",
                    "target": "/l",
                    "bind_options": [{"propagation": "rshared"}],
                }
            ],
            [_mount(Source=f"{TASK}/local", Target="/l", BindOptions={"Propagation": "rshared"})],
        ),
        (
            CTX,
            {"type": "tmpfs", "target": "/t", "tmpfs_options": {"size": 1000, "mode": 0o1777}},
            [
                {
                    "Type": "tmpfs",
                    "Source": "",
                    "Target": "/t",
                    "ReadOnly": False,
                    "TmpfsOptions": {"SizeBytes": 1000, "Mode": 0o1777},
                }
            ],
        ),
        (
            replace(CTX, volumes_enabled=True),
            [
                {
                    "target": "/v",
                    "source": "vol",
                    "volume_options": [
                        {
                            "no_copy": True,
                            "labels": [{"a": "b"}],
                            "driver_config": [{"name": "nfs", "options": [{"addr": "h"}]}],
                        }
                    ],
                },
                {"type": "bind", "source": "/etc/ssl", "target": "/ssl"},
            ],
            [
                {
                    "Type": "volume",
                    "Source": "vol",
                    "Target": "/v",
                    "ReadOnly": False,
                    "VolumeOptions": {
                        "NoCopy": True,
                        "Labels": {"a": "b"},
                        "DriverConfig": {"Name": "nfs", "Options": {"addr": "h"}},
                    },
                },
                _mount(Source="/etc/ssl", Target="/ssl"),
            ],
        ),
    ],
)
def test_mount_blocks(ctx: ContainerContext, mounts: Any, want: list[dict[str, Any]]) -> None:
    got = spec(ctx, mount=mounts)["mounts"]
    assert got[:4] == spec(ctx)["mounts"][:4]  # the alloc's dirs first
    assert got[4:-1] == want
    assert got[-1]["Target"] == "/data"  # the host volumes last


def test_mounts_is_an_alias() -> None:
    m = {"type": "tmpfs", "target": "/t"}
    assert spec(mounts=[m])["mounts"] == spec(mount=[m])["mounts"]


@pytest.mark.parametrize(
    ("mounts", "want"),
    [
        ([{"type": "bind", "source": "/etc", "target": "/e"}], 'cannot mount host path: "/etc"'),
        ([{"type": "volume", "source": "v", "target": "/v"}], 'cannot mount volume: "v"'),
        ([{"target": "/v"}], 'cannot mount volume: ""'),  # a volume, by default
        ([{"type": "tmpfs", "source": "x", "target": "/t"}], 'invalid source, must be "" for tmpfs'),
        ([{"type": "nfs", "target": "/n"}], 'invalid mount type, must be "bind", "volume", "tmpfs": "nfs"'),
    ],
)
def test_mount_blocks_refused(mounts: list[dict[str, Any]], want: str) -> None:
    assert [want in p for p in problems(mount=mounts)] == [True]


@pytest.mark.parametrize(
    ("ctx", "config", "want", "problem"),
    [
        (CTX, {"privileged": True}, None, "Docker privileged mode is disabled on this Nomad agent"),
        (replace(CTX, allow_privileged=True), {"privileged": True}, True, None),
        (CTX, {"privileged": False}, None, None),
    ],
)
def test_privileged(
    ctx: ContainerContext, config: dict[str, Any], want: bool | None, problem: str | None
) -> None:
    if problem:
        assert problems(ctx, **config) == [problem]
    else:
        assert spec(ctx, **config).get("privileged") == want


@pytest.mark.parametrize(
    ("ctx", "config", "add", "drop"),
    [
        (CTX, {"cap_drop": ["cap_chown", "MKNOD"]}, None, ["CHOWN", "MKNOD", "NET_RAW"]),
        (CTX, {"cap_add": ["chown"]}, ["CHOWN"], ["NET_RAW"]),
        (replace(CTX, allow_caps=["all"]), {"cap_add": ["SYS_ADMIN"]}, ["SYS_ADMIN"], None),
        (replace(CTX, allow_caps=["all"]), {"cap_add": ["all"], "cap_drop": ["ALL"]}, ["ALL"], ["ALL"]),
    ],
)
def test_capabilities(ctx: ContainerContext, config: dict[str, Any], add: Any, drop: Any) -> None:
    got = spec(ctx, **config)
    assert (got.get("cap_add"), got.get("cap_drop")) == (add, drop)


def test_capabilities_not_allowed() -> None:
    assert problems(cap_add=["sys_admin", "NET_RAW", "chown"]) == [
        "driver does not allow the following capabilities: net_raw, sys_admin"
    ]


@pytest.mark.parametrize(
    ("requested", "total", "want"),
    [(500, 4000, 500), (1, 4000, 2), (0, 4000, 2), (1000, 524_288, 500), (2, 10_000_000, 2)],
)
def test_cpu_shares(requested: int, total: int, want: int) -> None:
    assert cpu_shares(requested, total) == want


@pytest.mark.parametrize(
    ("ctx", "config", "want"),
    [
        (CTX, {"cpu_hard_limit": True}, {"cpu_period": 100_000, "cpu_quota": 12_500 * 4}),
        (
            CTX,
            {"cpu_hard_limit": True, "cpu_cfs_period": 50_000},
            {"cpu_period": 50_000, "cpu_quota": 25_000},
        ),
        (CTX, {"cpu_hard_limit": True, "cpu_cfs_period": 0}, {"cpu_period": 100_000, "cpu_quota": 50_000}),
        (CTX, {"cpu_cfs_period": 50_000}, {}),  # without cpu_hard_limit: nothing
        (
            replace(CTX, cpu_shares=1000, cpu_cores=1),
            {"cpu_hard_limit": True},
            {"cpu_period": 100_000, "cpu_quota": 25_000},
        ),
    ],
)
def test_cpu_hard_limit(ctx: ContainerContext, config: dict[str, Any], want: dict[str, int]) -> None:
    got = spec(ctx, **config)
    assert {k: got[k] for k in ("cpu_period", "cpu_quota") if k in got} == want


@pytest.mark.parametrize(
    ("ctx", "period", "want"),
    [
        (CTX, 2_000_000, "invalid value for cpu_cfs_period"),
        (CTX, -1, "invalid value for cpu_cfs_period"),
        (
            replace(CTX, cpu_cores=0),
            0,
            "cpu_hard_limit: the node's total compute and core count are not known",
        ),
    ],
)
def test_cpu_hard_limit_refused(ctx: ContainerContext, period: int, want: str) -> None:
    assert problems(ctx, cpu_hard_limit=True, cpu_cfs_period=period) == [want]


@pytest.mark.parametrize(
    ("hard", "memory", "memory_max", "want"),
    [
        (0, 256, 0, (256 * MB, 0)),
        (0, 256, 512, (512 * MB, 256 * MB)),  # memory_max: the limit, memory reserved
        (1024, 256, 512, (1024 * MB, 256 * MB)),  # the greater of the two
        (300, 256, 0, (300 * MB, 256 * MB)),  # memory_hard_limit alone
        (1024, 256, -1, (0, 256 * MB)),  # no limit
    ],
)
def test_memory_limits(hard: int, memory: int, memory_max: int, want: tuple[int, int]) -> None:
    assert memory_limits(hard, memory, memory_max) == want


@pytest.mark.parametrize(
    ("ctx", "config", "want"),
    [
        (CTX, {}, {"mem_limit": 256 * MB, "memswap_limit": 256 * MB}),
        (
            replace(CTX, memory_max_mb=512),
            {},
            {"mem_limit": 512 * MB, "memswap_limit": 512 * MB, "mem_reservation": 256 * MB},
        ),
        (
            CTX,
            {"memory_hard_limit": 1024},
            {"mem_limit": 1024 * MB, "memswap_limit": 1024 * MB, "mem_reservation": 256 * MB},
        ),
        (replace(CTX, memory_max_mb=-1), {}, {"mem_reservation": 256 * MB}),
    ],
)
def test_memory(ctx: ContainerContext, config: dict[str, Any], want: dict[str, int]) -> None:
    got = spec(ctx, **config)
    assert {k: got[k] for k in ("mem_limit", "memswap_limit", "mem_reservation") if k in got} == want


def test_memory_above_the_hard_limit() -> None:
    assert problems(replace(CTX, memory_mb=2048), memory_hard_limit=1024) == [
        "task memory requirements exceed driver hard limit of 1024 MB"
    ]


@pytest.mark.parametrize(
    ("ulimit", "want"),
    [
        ({"nofile": "2048:4096"}, [{"Name": "nofile", "Soft": 2048, "Hard": 4096}]),
        ([{"nproc": "512"}], [{"Name": "nproc", "Soft": 512, "Hard": 512}]),  # no hard: the soft
        (
            {"nproc": 512, "core": "-1:-1"},  # HCL's numbers as strings
            [{"Name": "core", "Soft": -1, "Hard": -1}, {"Name": "nproc", "Soft": 512, "Hard": 512}],
        ),
    ],
)
def test_ulimits(ulimit: Any, want: list[dict[str, Any]]) -> None:
    assert spec(ulimit=ulimit)["ulimits"] == want


@pytest.mark.parametrize(
    ("ulimit", "want"),
    [
        ({"nofile": ""}, 'Malformed ulimit specification nofile: "", cannot be empty'),
        ({"nofile": "x:10"}, "Malformed soft ulimit nofile: x:10"),
        ({"nofile": "10:many"}, "Malformed hard ulimit nofile: 10:many"),
    ],
)
def test_ulimits_refused(ulimit: dict[str, str], want: str) -> None:
    assert problems(ulimit=ulimit) == [want]


def test_what_the_engine_takes_as_written() -> None:
    config = {
        "hostname": "h",
        "work_dir": "/w",
        "tty": True,
        "interactive": True,
        "init": True,
        "readonly_rootfs": True,
        "dns_servers": ["10.0.0.2", "fd00::2"],
        "dns_search_domains": ["svc"],
        "dns_options": ["ndots:2"],
        "extra_hosts": ["db:10.0.0.9"],
        "mac_address": "02:42:ac:11:00:02",
        "security_opt": ["no-new-privileges", "apparmor=unconfined", "label:disable"],
        "group_add": ["audio"],
        "ipc_mode": "host",
        "pid_mode": "host",
        "uts_mode": "host",
        "userns_mode": "host",
        "cgroupns": "private",
        "runtime": "runc",
        "sysctl": [{"net.core.somaxconn": "16384"}],
        "storage_opt": {"size": "40G"},
        "shm_size": 67108864,
        "pids_limit": 100,
        "oom_score_adj": 500,
        "healthchecks": [{"disable": True}],
        "devices": [
            {"host_path": "/dev/fuse"},
            {"host_path": "/dev/sda", "container_path": "/dev/xvda", "cgroup_permissions": "r"},
        ],
    }
    got = spec(replace(CTX, kill_signal="SIGINT", user="nobody"), **config)
    assert {k: v for k, v in got.items() if k not in spec()} == {
        "hostname": "h",
        "working_dir": "/w",
        "tty": True,
        "stdin_open": True,
        "init": True,
        "read_only": True,
        "dns": ["10.0.0.2", "fd00::2"],
        "dns_search": ["svc"],
        "dns_opt": ["ndots:2"],
        "extra_hosts": ["db:10.0.0.9"],
        "mac_address": "02:42:ac:11:00:02",
        "security_opt": ["no-new-privileges", "apparmor=unconfined", "label:disable"],
        "group_add": ["audio"],
        "ipc_mode": "host",
        "pid_mode": "host",
        "uts_mode": "host",
        "userns_mode": "host",
        "cgroupns": "private",
        "runtime": "runc",
        "sysctls": {"net.core.somaxconn": "16384"},
        "storage_opt": {"size": "40G"},
        "shm_size": 67108864,
        "pids_limit": 100,
        "oom_score_adj": 500,
        "healthcheck": {"Test": ["NONE"]},
        "devices": ["/dev/fuse:/dev/fuse:rwm", "/dev/sda:/dev/xvda:r"],
        "stop_signal": "SIGINT",
        "user": "nobody",
    }


@pytest.mark.parametrize(
    ("logging", "want"),
    [
        ({"type": "json-file", "config": [{"max-size": "10m"}]}, {"max-size": "10m"}),
        ([{"driver": "json-file", "config": {"max-file": "5"}}], {"max-file": "5"}),
        ({"type": "json-file"}, {"max-file": "2", "max-size": "2m"}),
        # Another driver: json-file still, without that driver's options (the register warns).
        (
            {"type": "syslog", "config": {"syslog-address": "udp://h:514"}},
            {"max-file": "2", "max-size": "2m"},
        ),
    ],
)
def test_logging_is_json_file(logging: Any, want: dict[str, str]) -> None:
    assert spec(logging=logging)["log_config"] == {"Type": "json-file", "Config": want}


def test_every_problem_is_listed() -> None:
    got = problems(
        image="Bad:",
        command=" sh",
        ports=["grpc"],
        volumes=["/etc:/etc"],
        privileged=True,
        isolation="hyperv",
        cap_add=["sys_admin"],
        security_opt=["bogus"],
        dns_servers=["nameserver"],
        mac_address="nope",
        ulimit={"nofile": "x"},
        devices=[{"container_path": "/dev/x"}, {"host_path": "/dev/y", "cgroup_permissions": "rwx"}],
        mount=[{"type": "nfs"}],
        memory_hard_limit=10,
        cpu_hard_limit=True,
        cpu_cfs_period=-5,
    )
    assert got == [
        'image "Bad:" does not match registry specification',
        'command contains extra white space: " sh"',
        'port label "grpc" not found in the alloc\'s networks',
        'invalid ip address for container dns server: "nameserver"',
        'failed to parse mac_address "nope"',
        'invalid mount type, must be "bind", "volume", "tmpfs": "nfs"',
        'volumes are not enabled; cannot mount host path: "/etc:/etc"',
        "Docker privileged mode is disabled on this Nomad agent",
        'cannot use isolation mode "hyperv" on linux',
        "driver does not allow the following capabilities: sys_admin",
        'invalid security_opt: "bogus"',
        "host path must be set in configuration for devices",
        'invalid cgroup permission string: "rwx"',
        "Malformed soft ulimit nofile: x",
        "invalid value for cpu_cfs_period",
        "task memory requirements exceed driver hard limit of 10 MB",
    ]


def test_a_config_of_the_wrong_types_is_refused_first() -> None:
    got = problems(ports="http", privileged="yes", mount=[{"type": 1}])
    assert got == [
        'docker config "mount": [0] "type": must be a string, not 1',
        "docker config \"ports\": must be a list of strings, not 'http'",
        "docker config \"privileged\": must be true or false, not 'yes'",
    ]
    assert problems(image="")[0] == 'docker config "image": must not be empty'
