"""An alloc's resource usage as Nomad's client reports it (`/v1/client/allocation/:id/stats`,
AllocResourceUsage), which the Nomad Autoscaler's nomad APM reads: CPU and memory per task and
their sum. Pure: the agent hands in its samples.

- A raw_exec task's usage is its process group's, from two samples of the processes' CPU time
  (Nomad's executor: Percent of one core, TotalTicks that share of the node's MHz per core).
- A docker task's is the engine's stats document turned as Nomad's docker driver turns it
  (CalculateCPUPercent over the engine's own two samples)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What each source measures (Nomad's Measured lists).
EXECUTOR_CPU_MEASURED = ["System Mode", "User Mode", "Percent"]
EXECUTOR_MEMORY_MEASURED = ["RSS"]
DOCKER_CPU_MEASURED = ["Throttled Periods", "Throttled Time", "Percent"]
DOCKER_MEMORY_MEASURED = ["RSS", "Cache", "Swap", "Usage", "Max Usage"]

_MEMORY_FIELDS = ("RSS", "Cache", "Swap", "MappedFile", "Usage", "MaxUsage", "KernelUsage", "KernelMaxUsage")
_CPU_FIELDS = ("SystemMode", "UserMode", "TotalTicks", "ThrottledPeriods", "ThrottledTime", "Percent")


@dataclass(frozen=True)
class ProcessSample:
    """A process group's CPU time (clock ticks, user and system) and memory at one moment."""

    user_ticks: int
    system_ticks: int
    rss_bytes: int
    swap_bytes: int
    at_ns: int


def ticks_consumed(percent: float, total_compute: int, cores: int) -> float:
    """Nomad's TicksConsumed: a share of one core in MHz of the node's per-core speed."""
    return (percent / 100) * total_compute / max(1, cores)


def _usage(memory: dict[str, Any], cpu: dict[str, Any]) -> dict[str, Any]:
    return {"MemoryStats": memory, "CpuStats": cpu, "DeviceStats": []}


def process_usage(
    before: ProcessSample, after: ProcessSample, clock_ticks: int, total_compute: int, cores: int
) -> dict[str, Any]:
    """A raw_exec task's TaskResourceUsage from two samples of its process group."""
    seconds = max(1e-9, (after.at_ns - before.at_ns) / 1e9)

    def percent(ticks: int) -> float:
        return max(0, ticks) / clock_ticks / seconds * 100

    user = percent(after.user_ticks - before.user_ticks)
    system = percent(after.system_ticks - before.system_ticks)
    total = user + system
    memory: dict[str, Any] = dict.fromkeys(_MEMORY_FIELDS, 0)
    memory.update({"RSS": after.rss_bytes, "Swap": after.swap_bytes, "Measured": EXECUTOR_MEMORY_MEASURED})
    cpu: dict[str, Any] = dict.fromkeys(_CPU_FIELDS, 0)
    cpu.update(
        {
            "SystemMode": system,
            "UserMode": user,
            "Percent": total,
            "TotalTicks": ticks_consumed(total, total_compute, cores),
            "Measured": EXECUTOR_CPU_MEASURED,
        }
    )
    return {"ResourceUsage": _usage(memory, cpu), "Timestamp": after.at_ns, "Pids": None}


def cpu_percent(new: int, old: int, new_total: int, old_total: int, cores: int) -> float:
    """Nomad's CalculateCPUPercent: the container's share of the system's CPU time between two
    samples, times the cores (100 = one core)."""
    delta, system = new - old, new_total - old_total
    return delta / system * cores * 100 if delta > 0 and system > 0 else 0.0


def docker_usage(stats: dict[str, Any], total_compute: int, cores: int, at_ns: int) -> dict[str, Any]:
    """A docker task's TaskResourceUsage from the engine's stats document (cgroups v1 or v2)."""
    mem = stats.get("memory_stats") or {}
    detail = mem.get("stats") or {}
    memory: dict[str, Any] = dict.fromkeys(_MEMORY_FIELDS, 0)
    memory.update(
        {
            "RSS": detail.get("rss") or detail.get("anon", 0),
            "Cache": detail.get("cache") or detail.get("file", 0),
            "Swap": detail.get("swap", 0),
            "MappedFile": detail.get("file_mapped") or detail.get("mapped_file", 0),
            "Usage": mem.get("usage", 0),
            "MaxUsage": mem.get("max_usage", 0),
            "Measured": DOCKER_MEMORY_MEASURED,
        }
    )
    now, pre = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    usage, pre_usage = now.get("cpu_usage") or {}, pre.get("cpu_usage") or {}
    system_now, system_pre = now.get("system_cpu_usage", 0), pre.get("system_cpu_usage", 0)
    percent = cpu_percent(
        usage.get("total_usage", 0), pre_usage.get("total_usage", 0), system_now, system_pre, cores
    )
    total_now, total_pre = usage.get("total_usage", 0), pre_usage.get("total_usage", 0)
    throttling = now.get("throttling_data") or {}
    cpu: dict[str, Any] = {
        "SystemMode": cpu_percent(
            usage.get("usage_in_kernelmode", 0),
            pre_usage.get("usage_in_kernelmode", 0),
            total_now,
            total_pre,
            cores,
        ),
        "UserMode": cpu_percent(
            usage.get("usage_in_usermode", 0),
            pre_usage.get("usage_in_usermode", 0),
            total_now,
            total_pre,
            cores,
        ),
        "TotalTicks": ticks_consumed(percent, total_compute, cores),
        "ThrottledPeriods": throttling.get("throttled_periods", 0),
        "ThrottledTime": throttling.get("throttled_time", 0),
        "Percent": percent,
        "Measured": DOCKER_CPU_MEASURED,
    }
    return {"ResourceUsage": _usage(memory, cpu), "Timestamp": at_ns, "Pids": None}


def alloc_usage(tasks: dict[str, dict[str, Any]], at_ns: int) -> dict[str, Any]:
    """The alloc's AllocResourceUsage: each task's usage, and their sum."""
    memory: dict[str, Any] = dict.fromkeys(_MEMORY_FIELDS, 0)
    cpu: dict[str, Any] = dict.fromkeys(_CPU_FIELDS, 0)
    measured_memory: list[str] = []
    measured_cpu: list[str] = []
    for usage in tasks.values():
        ru = usage["ResourceUsage"]
        for key in _MEMORY_FIELDS:
            memory[key] += ru["MemoryStats"].get(key, 0)
        for key in _CPU_FIELDS:
            cpu[key] += ru["CpuStats"].get(key, 0)
        measured_memory += [m for m in ru["MemoryStats"].get("Measured", []) if m not in measured_memory]
        measured_cpu += [m for m in ru["CpuStats"].get("Measured", []) if m not in measured_cpu]
    memory["Measured"], cpu["Measured"] = measured_memory, measured_cpu
    latest = max((u.get("Timestamp", 0) for u in tasks.values()), default=at_ns)
    return {"ResourceUsage": _usage(memory, cpu), "Tasks": tasks, "Timestamp": latest}
