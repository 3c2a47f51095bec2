"""What the agent measures of its tasks for `/v1/client/allocation/:id/stats`
(drover.control.client.usage shapes it): a raw_exec task's process group from /proc, a docker
task's container from the engine's stats. CPU needs two samples: the last one kept per task,
or, when it is older than SAMPLE_MAX_AGE, a fresh pair SAMPLE_GAP apart."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from drover.client.dockerdriver import DockerHandle
from drover.client.drivers import ProcessHandle, TaskHandle
from drover.control.client.usage import ProcessSample, alloc_usage, docker_usage, process_usage

SAMPLE_GAP = 0.2
SAMPLE_MAX_AGE = 10.0
_PAGE = os.sysconf("SC_PAGE_SIZE")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def group_sample(pgid: int) -> ProcessSample:
    """The CPU time and memory of every process of process group `pgid`, from /proc."""
    user = system = rss = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp ... utime (12th), stime (13th), rss (22nd).
        if int(fields[2]) != pgid:
            continue
        user += int(fields[11])
        system += int(fields[12])
        rss += int(fields[21]) * _PAGE
    return ProcessSample(user, system, rss, 0, time.time_ns())


class UsageSampler:
    """Keeps each task's last sample, so a stats read measures since the one before."""

    def __init__(self, total_compute: int, cores: int) -> None:
        self.total_compute = total_compute
        self.cores = cores
        self.last: dict[tuple[str, str], tuple[float, ProcessSample]] = {}

    async def task(self, alloc_id: str, task: str, handle: TaskHandle) -> dict[str, Any] | None:
        """The task's TaskResourceUsage; None for a handle with nothing to measure (mock)."""
        if isinstance(handle, DockerHandle):
            stats = await handle.driver.call(handle.driver.api().stats, handle.container_id, stream=False)
            return docker_usage(stats, self.total_compute, self.cores, time.time_ns())
        if not isinstance(handle, ProcessHandle):
            return None
        key = (alloc_id, task)
        now = time.monotonic()
        kept = self.last.get(key)
        if kept is None or now - kept[0] > SAMPLE_MAX_AGE:
            before = await asyncio.to_thread(group_sample, handle.pid)
            await asyncio.sleep(SAMPLE_GAP)
        else:
            before = kept[1]
        after = await asyncio.to_thread(group_sample, handle.pid)
        self.last[key] = (time.monotonic(), after)
        return process_usage(before, after, _CLOCK_TICKS, self.total_compute, self.cores)

    async def alloc(self, alloc_id: str, handles: dict[str, TaskHandle]) -> dict[str, Any]:
        tasks = {}
        for name, handle in handles.items():
            usage = await self.task(alloc_id, name, handle)
            if usage is not None:
                tasks[name] = usage
        return alloc_usage(tasks, time.time_ns())
