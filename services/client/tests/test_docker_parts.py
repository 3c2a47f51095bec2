"""The docker driver's parts that need no engine: its agent options, the engine's timestamps,
how a log follower resumed after an agent's restart skips what was written already, and what
the agent makes of an engine that does not answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from drover.client import dockeroptions
from drover.client.dockerdriver import DockerDriver, _seccomp_profiles, fingerprint
from drover.client.dockerlogs import LogFollower, checkpoint_path, parse_timestamp, read_checkpoint
from drover.client.drivers import StartError, TaskContext
from drover.client.logrotate import log_indexes
from drover.model.alloc import Allocation
from drover.model.job import Job, Task, TaskGroup
from drover.model.node import Node


@pytest.mark.parametrize(
    ("stamp", "ns"),
    [
        (b"1970-01-01T00:00:01Z", 1_000_000_000),
        (b"1970-01-01T00:00:01.5Z", 1_500_000_000),
        (b"1970-01-01T00:00:01.000000001Z", 1_000_000_001),
        (b"2026-11-28T15:00:00.123456789Z", 1795878000_123456789),
    ],
)
def test_engine_timestamps(stamp: bytes, ns: int) -> None:
    assert parse_timestamp(stamp) == ns


def test_a_bad_timestamp_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_timestamp(b"hello")


def test_docker_options_default_as_nomads() -> None:
    problems: list[str] = []
    o = dockeroptions.parse({}, problems)
    assert problems == []
    assert (o.gc_image, o.gc_image_delay, o.gc_container, o.volumes_enabled, o.allow_privileged) == (
        True, 180.0, True, False, False,
    )  # fmt: skip
    assert (o.dangling_enabled, o.dangling_period, o.dangling_grace) == (True, 300.0, 300.0)


def test_docker_options_as_hcl_hands_them() -> None:
    problems: list[str] = []
    config = {
        "allow_privileged": True,
        "volumes": [{"enabled": True}],
        "gc": [{"image": False, "image_delay": "10s", "dangling_containers": [{"period": "1m"}]}],
    }
    o = dockeroptions.parse(config, problems)
    assert problems == []
    assert (o.allow_privileged, o.volumes_enabled, o.gc_image, o.gc_image_delay, o.dangling_period) == (
        True, True, False, 10.0, 60.0,
    )  # fmt: skip


def test_every_problem_of_docker_options_is_listed() -> None:
    problems: list[str] = []
    config = {
        "allow_privileged": "yes",
        "gc": {"image_delay": "soon"},
        "volume": {},
        "extra_labels": "job_name",
    }
    dockeroptions.parse(config, problems)
    assert len(problems) == 4, problems
    assert "plugin \"docker\".config: unknown key 'volume'" in problems
    assert 'plugin "docker".config.allow_privileged: must be true or false' in problems
    assert any(p.startswith('plugin "docker".config.gc.image_delay: ') for p in problems)
    assert 'plugin "docker".config.extra_labels: must be a list of strings' in problems


def follower(tmp: Path, tty: bool = False) -> LogFollower:
    return LogFollower(None, "c1", tmp / "logs", tmp, "web", "stdout", 3, 1, tty)


def read(tmp: Path) -> bytes:
    return b"".join(p.read_bytes() for _, p in log_indexes(tmp / "logs", "web", "stdout"))


def test_a_resumed_follower_skips_what_was_written(tmp_path: Path) -> None:
    first = follower(tmp_path)
    first._entry(b"1970-01-01T00:00:01Z one\n")
    first._entry(b"1970-01-01T00:00:02Z two\n")
    first._checkpoint(force=True)
    first.rotator.close()
    assert read_checkpoint(tmp_path, "stdout") == 2_000_000_000
    # The engine hands the new follower entries since the checkpoint's second, again.
    again = follower(tmp_path)
    assert again.since == 2_000_000_000
    again._entry(b"1970-01-01T00:00:02Z two\n")
    again._entry(b"1970-01-01T00:00:02.5Z three\n")
    again.rotator.close()
    assert read(tmp_path) == b"one\ntwo\nthree\n"


def test_a_raw_stream_is_split_into_entries(tmp_path: Path) -> None:
    f = follower(tmp_path, tty=True)
    rest = f._lines(b"1970-01-01T00:00:01Z a\n1970-01-01T00:00:02Z b")
    assert rest == b"1970-01-01T00:00:02Z b"
    assert f._lines(rest + b"c\n") == b""
    f.rotator.close()
    assert read(tmp_path) == b"a\nbc\n"
    assert checkpoint_path(tmp_path, "stdout").exists()


async def test_an_engine_that_does_not_answer_is_undetected_and_a_driver_failure(tmp_path: Path) -> None:
    """No engine at the endpoint (a socket path nothing listens on): the fingerprint says the
    driver is undetected, and a start is a recoverable failure in Nomad's words."""
    options = dockeroptions.DockerOptions(endpoint=f"unix://{tmp_path}/docker.sock")
    info, attributes = fingerprint(options)
    assert (info.detected, info.healthy, attributes) == (False, False, {})
    assert info.health_description == "Failed to connect to docker daemon"
    driver = DockerDriver(options, "node-1")
    task = Task(name="web", driver="docker", config={"image": "drover/httpd:local"})
    job = Job(id="web", task_groups=[TaskGroup(name="g", tasks=[task])])
    ctx = TaskContext(Allocation(id="a1", job_id="web", task_group="g"), job, Node(id="node-1"), tmp_path)
    with pytest.raises(StartError) as e:
        await driver.start(task, tmp_path / "web", tmp_path / "logs", {}, ctx)
    assert str(e.value).startswith("Failed to create docker client: ") and e.value.recoverable


def test_a_seccomp_profile_file_is_sent_as_its_json(tmp_path: Path) -> None:
    profile = tmp_path / "profile.json"
    profile.write_text('{"defaultAction": "SCMP_ACT_ALLOW"}')
    options = ["no-new-privileges", f"seccomp={profile}", "seccomp=unconfined"]
    assert _seccomp_profiles(options) == [
        "no-new-privileges",
        'seccomp={"defaultAction": "SCMP_ACT_ALLOW"}',
        "seccomp=unconfined",
    ]
    with pytest.raises(StartError, match="failed to read seccomp profile"):
        _seccomp_profiles([f"seccomp={tmp_path}/missing.json"])
