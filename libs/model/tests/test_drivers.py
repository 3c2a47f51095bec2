"""Driver configs checked at register: unknown keys and bad values, every problem listed."""

from __future__ import annotations

from typing import Any

import pytest

from drover.model import Job, Task, TaskGroup
from drover.model.canonicalize import canonicalize
from drover.model.dockerconfig import DOCKER_KEPT_ONLY, block, block_list, string_map
from drover.model.drivers import DRIVER_DOCKER, SCHEMAS, config_problems
from drover.model.validation import validate_job


@pytest.mark.parametrize(
    ("driver", "config", "problems"),
    [
        ("mock", {"run_for": "10s", "exit_code": 1, "kill_after": "1s"}, []),
        ("mock", {}, []),
        ("mock", {"run_for": "soon"}, ['mock config "run_for"']),
        ("mock", {"exit_code": "1"}, ['mock config "exit_code": must be an integer']),
        ("mock", {"runfor": "1s", "bogus": 1}, ['unknown key "bogus"', 'unknown key "runfor"']),
        ("raw_exec", {"command": "/bin/sleep", "args": ["1"]}, []),
        ("raw_exec", {}, ['"command" is required']),
        ("raw_exec", {"command": " "}, ["must not be empty"]),
        (
            "raw_exec",
            {"command": "x", "args": "1 2", "image": "redis"},
            ['"args": must be a list', 'unknown key "image"'],
        ),
        ("exec", {"image": "redis", "anything": True}, []),  # not ours to check
    ],
)
def test_config_problems(driver: str, config: dict[str, Any], problems: list[str]) -> None:
    got = config_problems(driver, config)
    assert len(got) == len(problems), got
    for want, have in zip(problems, got, strict=True):
        assert want in have


# A docker task's config as the jobspec hands it: blocks and maps written in place as lists of
# one object, repeated blocks as lists.
HCL_DOCKER = {
    "image": "redis:7",
    "ports": ["db"],
    "shm_size": 1024,
    "sysctl": [{"net.core.somaxconn": "16384"}],
    "devices": [{"host_path": "/dev/x"}],
    "labels": [{"a": "b", "n": 1}],
    "ulimit": [{"nofile": "2048:4096"}],
    "mount": [
        {"type": "bind", "source": "local/x", "target": "/x", "bind_options": [{"propagation": "rshared"}]},
        {"type": "tmpfs", "target": "/t", "tmpfs_options": [{"size": 1000}]},
        {
            "type": "volume",
            "target": "/v",
            "volume_options": [
                {"labels": [{"a": "b"}], "driver_config": [{"name": "n", "options": [{"o": "1"}]}]}
            ],
        },
    ],
    "logging": [{"type": "json-file", "config": [{"max-size": "10m"}]}],
    "auth": [{"username": "u", "password": "p"}],
    "storage_opt": [{"size": "4G"}],
    "healthchecks": [{"disable": True}],
    "port_map": [{"db": 6379}],
}
# The same as the JSON API may send it: each block or map as the object itself.
JSON_DOCKER = {
    "image": "ghcr.io/org/app@sha256:" + "ab" * 32,
    "command": "/bin/app",
    "args": ["-v"],
    "entrypoint": ["/init"],
    "labels": {"a": "b"},
    "sysctl": {"net.core.somaxconn": "16384"},
    "ulimit": {"nofile": "2048:4096"},
    "mount": {"type": "tmpfs", "target": "/t", "tmpfs_options": {"size": 1000.0, "mode": 511}},
    "mounts": [{"type": "bind", "target": "/b"}],
    "logging": {"driver": "syslog", "config": {"tag": "x"}},
    "auth": {"server_address": "ghcr.io"},
    "image_pull_timeout": "5m",
    "cpu_hard_limit": True,
    "cpu_cfs_period": 100000,
    "memory_hard_limit": 512,
    "privileged": False,
    "network_mode": "host",
    "volumes": ["a:/a:ro"],
}


@pytest.mark.parametrize(
    ("config", "problems"),
    [
        (HCL_DOCKER, []),
        (JSON_DOCKER, []),
        ({}, ['docker config: "image" is required']),
        ({"image": ""}, ['docker config "image": must not be empty']),
        ({"image": "redis", "cmd": "x"}, ['docker config: unknown key "cmd"']),
        ({"image": "redis", "args": "a b"}, ['docker config "args": must be a list of strings']),
        ({"image": "redis", "shm_size": "64m"}, ['docker config "shm_size": must be a whole number']),
        ({"image": "redis", "shm_size": 1.5}, ['docker config "shm_size": must be a whole number']),
        ({"image": "redis", "privileged": 1}, ['docker config "privileged": must be true or false']),
        ({"image": "redis", "image_pull_timeout": "soon"}, ['docker config "image_pull_timeout"']),
        ({"image": "redis", "labels": "a=b"}, ['docker config "labels": must be a map of strings']),
        ({"image": "redis", "labels": [{"a": ["b"]}]}, ['docker config "labels": must be a map of strings']),
        (
            {"image": "redis", "port_map": [{"db": "6379"}]},
            ['docker config "port_map": must be a map of numbers'],
        ),
        (
            {"image": "redis", "auth": [{"username": "u"}, {"username": "v"}]},
            ['docker config "auth": only one block is allowed, not 2'],
        ),
        ({"image": "redis", "auth": {"user": "u"}}, ['docker config "auth": unknown key "user"']),
        ({"image": "redis", "healthchecks": "off"}, ['docker config "healthchecks": must be a block']),
        (
            {
                "image": "redis",
                "mount": [{"type": "bind"}, {"target": 1, "bind_options": {"propagation": 2}}],
            },
            [
                'docker config "mount": [1] "bind_options": "propagation": must be a string, not 2; '
                '[1] "target": must be a string, not 1'
            ],
        ),
        (
            {"image": "redis", "mount": {"tmpfs_options": [{"size": "1g"}]}},
            ['docker config "mount": "tmpfs_options": "size": must be a whole number'],
        ),
        (
            {"image": "redis", "mount": [{"volume_options": [{"driver_config": [{"options": "x"}]}]}]},
            ['"driver_config": "options": must be a map of strings'],
        ),
        (
            {"image": "redis", "logging": {"type": "json-file", "config": {"max-size": None}}},
            ['docker config "logging": "config": must be a map of strings'],
        ),
        (
            {"image": 7, "ports": [80], "tty": "true"},
            [
                'docker config "image": must be a string',
                'docker config "ports": must be a list of strings',
                'docker config "tty": must be true or false',
            ],
        ),
    ],
)
def test_docker_config_problems(config: dict[str, Any], problems: list[str]) -> None:
    got = config_problems("docker", config)
    assert len(got) == len(problems), got
    for want, have in zip(problems, got, strict=True):
        assert want in have


def test_the_docker_schema_holds_every_key_of_nomads_docker_driver() -> None:
    nomad = (
        "image advertise_ipv6_address args auth auth_soft_fail cap_add cap_drop cgroupns command "
        "container_exists_attempts cpuset_cpus cpu_hard_limit cpu_cfs_period devices dns_search_domains "
        "dns_options dns_servers entrypoint extra_hosts force_pull group_add healthchecks hostname init "
        "interactive ipc_mode ipv4_address ipv6_address isolation labels load logging mac_address "
        "memory_hard_limit mount mounts network_aliases network_mode oom_score_adj runtime pids_limit "
        "pid_mode ports port_map privileged image_pull_timeout readonly_rootfs security_opt shm_size "
        "storage_opt sysctl tty ulimit uts_mode userns_mode volumes volume_driver work_dir"
    )
    assert set(SCHEMAS[DRIVER_DOCKER]) == set(nomad.split())
    assert set(SCHEMAS[DRIVER_DOCKER]) >= DOCKER_KEPT_ONLY


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, {}),
        ({"a": 1}, {"a": 1}),
        ([{"a": 1}], {"a": 1}),
        ([], {}),
        ("x", {}),
    ],
)
def test_block(value: Any, want: dict[str, Any]) -> None:
    assert block(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, []),
        ({"a": 1}, [{"a": 1}]),
        ([{"a": 1}, {"b": 2}], [{"a": 1}, {"b": 2}]),
    ],
)
def test_block_list(value: Any, want: list[dict[str, Any]]) -> None:
    assert block_list(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, {}),
        ({"a": "b"}, {"a": "b"}),
        ([{"a": "b"}, {"c": "d", "a": "e"}], {"a": "e", "c": "d"}),
        ({"n": 80, "f": 1.5, "t": True, "no": False}, {"n": "80", "f": "1.5", "t": "true", "no": "false"}),
    ],
)
def test_string_map(value: Any, want: dict[str, str]) -> None:
    assert string_map(value) == want


def test_register_lists_every_driver_config_problem() -> None:
    job = canonicalize(
        Job(
            id="j",
            task_groups=[
                TaskGroup(
                    name="g",
                    tasks=[
                        Task(name="a", driver="raw_exec", config={"cmd": "ls"}),
                        Task(name="b", driver="mock", config={"run_for": "x"}),
                        Task(name="c", driver="docker", config={"image": "redis", "mount": {"type": 1}}),
                    ],
                )
            ],
        )
    )
    problems = "\n".join(validate_job(job))
    assert 'unknown key "cmd"' in problems and '"command" is required' in problems and '"run_for"' in problems
    assert 'docker config "mount": "type": must be a string' in problems
