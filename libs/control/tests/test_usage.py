"""An alloc's resource usage as Nomad's client reports it: a process group's from two samples,
a container's from the engine's stats document (one read off this machine's engine, a busy
loop in a container: cgroups v1), and the alloc's sum."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drover.control.client.usage import (
    ProcessSample,
    alloc_usage,
    cpu_percent,
    docker_usage,
    process_usage,
    ticks_consumed,
)

S = 1_000_000_000


@pytest.mark.parametrize(
    ("user", "system", "seconds", "percent"),
    [
        (100, 0, 1.0, 100.0),  # one core busy for the whole second (100 ticks/s)
        (50, 50, 2.0, 50.0),
        (0, 0, 1.0, 0.0),
        (200, 100, 1.5, 200.0),  # two cores
    ],
)
def test_a_process_groups_cpu_between_two_samples(
    user: int, system: int, seconds: float, percent: float
) -> None:
    before = ProcessSample(1000, 500, 0, 0, 0)
    after = ProcessSample(1000 + user, 500 + system, 4096 * 10, 0, int(seconds * S))
    usage = process_usage(before, after, clock_ticks=100, total_compute=4000, cores=2)
    cpu = usage["ResourceUsage"]["CpuStats"]
    assert cpu["Percent"] == pytest.approx(percent)
    assert cpu["TotalTicks"] == pytest.approx(percent / 100 * 2000)
    assert usage["ResourceUsage"]["MemoryStats"]["RSS"] == 40960
    assert usage["Timestamp"] == int(seconds * S)


@pytest.mark.parametrize(
    ("new", "old", "new_total", "old_total", "cores", "percent"),
    [
        (200, 100, 2000, 1000, 2, 20.0),
        (100, 100, 2000, 1000, 2, 0.0),  # no CPU used
        (200, 100, 1000, 1000, 2, 0.0),  # no system time passed: nothing to divide by
        (1100, 100, 2000, 1000, 1, 100.0),
    ],
)
def test_nomads_cpu_percent(
    new: int, old: int, new_total: int, old_total: int, cores: int, percent: float
) -> None:
    assert cpu_percent(new, old, new_total, old_total, cores) == pytest.approx(percent)


def test_a_containers_usage_from_the_engines_stats() -> None:
    stats = json.loads((Path(__file__).parent / "fixtures" / "docker-stats-cgroup-v1.json").read_text())
    usage = docker_usage(stats, total_compute=4000, cores=2, at_ns=7)
    cpu, memory = usage["ResourceUsage"]["CpuStats"], usage["ResourceUsage"]["MemoryStats"]
    # 925,099,599 ns of the container's CPU in 2,010,000,000 ns of the system's (both cores).
    assert cpu["Percent"] == pytest.approx(925_099_599 / 2_010_000_000 * 2 * 100)
    assert cpu["TotalTicks"] == pytest.approx(ticks_consumed(cpu["Percent"], 4000, 2))
    assert cpu["UserMode"] > cpu["SystemMode"]
    assert (memory["RSS"], memory["Cache"], memory["Usage"], memory["MaxUsage"]) == (
        114688,
        1290240,
        1794048,
        4079616,
    )
    assert memory["MappedFile"] == 897024
    assert usage["Timestamp"] == 7


def test_an_allocs_usage_is_its_tasks_summed() -> None:
    one = process_usage(ProcessSample(0, 0, 0, 0, 0), ProcessSample(100, 0, 1000, 0, S), 100, 4000, 2)
    two = process_usage(ProcessSample(0, 0, 0, 0, 0), ProcessSample(50, 0, 500, 0, 2 * S), 100, 4000, 2)
    total = alloc_usage({"a": one, "b": two}, at_ns=1)
    assert total["ResourceUsage"]["CpuStats"]["Percent"] == pytest.approx(100.0 + 25.0)
    assert total["ResourceUsage"]["MemoryStats"]["RSS"] == 1500
    assert total["Tasks"] == {"a": one, "b": two} and total["Timestamp"] == 2 * S
    assert alloc_usage({}, at_ns=5)["Timestamp"] == 5
