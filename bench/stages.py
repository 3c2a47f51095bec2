"""Where a probe job's time went: its register-to-placed time split into the pipeline's stages,
joined from the services' DEBUG logs and the probes' wall-clock timeline (bench.pipeline writes
both with `--log-level DEBUG --stages`).

Stages, each from the end of the one before (log times have millisecond resolution):
register (the request until its append is done, in the API), relay (until the broker hears of
the eval), dispatch, to_worker, scheduling, to_planner (the plan on its way), planner (until its
commit is done; `commit_wait` is the part between verifying and committing, mostly the events
lock), replans (from the first plan's commit to the last one's: 0 unless the first was refused
nodes), placed (until the probe's blocking query has answered).

    python -m bench.stages LOGDIR TIMELINE.json
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.report import percentile

STAGES = (
    "register",
    "relay",
    "dispatch",
    "to_worker",
    "scheduling",
    "to_planner",
    "planner",
    "replans",
    "placed",
)

_REGISTERED = re.compile(r"job (\S+) registered at \d+: append took (\d+) ms")
_HEARD = re.compile(r"eval (\S+) of (\S+) heard at")
_DISPATCHED = re.compile(r"dispatch eval (\S+) of (\S+),")
_TAKEN = re.compile(r"eval (\S+) of (\S+): [-\d]+ ms since it was created")
_ANSWERED = re.compile(r"eval (\S+): scheduled in (\d+) ms, plan answered in (\d+) ms")
_ARRIVED = re.compile(r"plan for (\S+) \(\d+ allocs\) arrived")
_COMMITTED = re.compile(
    r"plan for (\S+) \((\d+) placed, (\d+) nodes refused\): queued \d+ ms, verified in \d+ ms, "
    r"committed (\d+) ms later, applied in (\d+) ms"
)


def _time(line: str) -> float:
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


@dataclass
class _Probe:
    appended: float = 0.0
    append_ms: int = 0
    heard: float = 0.0
    dispatched: float = 0.0
    taken: float = 0.0
    arrived: float = 0.0
    # (when the worker had the answer, scheduling ms) per plan; (commit done, commit ms) per plan
    answers: list[tuple[float, int]] = field(default_factory=list)
    commits: list[tuple[float, int]] = field(default_factory=list)


def _read(logdir: Path, jobs: set[str]) -> dict[str, _Probe]:
    probes: dict[str, _Probe] = {}
    job_of: dict[str, str] = {}
    lines = [
        line for f in sorted(logdir.glob("*.log")) for line in f.read_text().splitlines() if " DEBUG " in line
    ]
    for line in lines:
        if m := _REGISTERED.search(line):
            if m[1] in jobs:
                p = probes.setdefault(m[1], _Probe())
                p.appended, p.append_ms = _time(line), int(m[2])
        elif (m := _HEARD.search(line)) and m[2] in jobs:
            job_of[m[1]] = m[2]
            p = probes.setdefault(m[2], _Probe())
            p.heard = p.heard or _time(line)
        elif (m := _DISPATCHED.search(line)) and m[2] in jobs:
            p = probes.setdefault(m[2], _Probe())
            p.dispatched = p.dispatched or _time(line)
        elif (m := _TAKEN.search(line)) and m[2] in jobs:
            p = probes.setdefault(m[2], _Probe())
            p.taken = p.taken or _time(line)
    for line in lines:
        if (m := _ANSWERED.search(line)) and m[1] in job_of:
            probes[job_of[m[1]]].answers.append((_time(line), int(m[2])))
        elif (m := _ARRIVED.search(line)) and m[1] in job_of:
            p = probes[job_of[m[1]]]
            p.arrived = p.arrived or _time(line)
        elif (m := _COMMITTED.search(line)) and m[1] in job_of:
            # Logged once the plan is also in the planner's replica: its commit ended `applied` before.
            probes[job_of[m[1]]].commits.append((_time(line) - int(m[5]) / 1000, int(m[4])))
    return probes


def split(logdir: Path, timeline: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Each probe's stages in ms (probes whose log lines are not all there are left out)."""
    probes = _read(logdir, {e["job"] for e in timeline})
    out: list[dict[str, float]] = []
    for e in timeline:
        p = probes.get(e["job"])
        if p is None or not (p.appended and p.heard and p.dispatched and p.taken and p.arrived):
            continue
        if not (p.answers and p.commits):
            continue
        first_commit, commit_ms = p.commits[0]
        scheduled = p.taken + p.answers[0][1] / 1000
        marks = [
            e["start"],
            p.appended,
            p.heard,
            p.dispatched,
            p.taken,
            scheduled,
            max(p.arrived, scheduled),
            first_commit,
            p.commits[-1][0],
            e["placed"],
        ]
        row = {name: (b - a) * 1000 for name, a, b in zip(STAGES, marks[:-1], marks[1:], strict=True)}
        row["commit_wait"] = float(commit_ms)
        row["append"] = float(p.append_ms)
        row["total"] = (e["placed"] - e["start"]) * 1000
        row["plans"] = float(len(p.commits))
        out.append(row)
    return out


def summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    """p50 and p90 of each stage (nearest rank), and how many probes needed more than one plan."""

    if not rows:
        return {"probes": 0}
    keys = ("total", *STAGES, "append", "commit_wait")
    return {
        "probes": len(rows),
        "replanned": sum(1 for r in rows if r["plans"] > 1),
        **{
            k: {
                "p50": round(statistics.median(r[k] for r in rows), 1),
                "p90": round(percentile([r[k] for r in rows], 0.9), 1),
            }
            for k in keys
        },
    }


def main() -> None:
    logdir, timeline = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    rows = split(logdir, timeline)
    print(json.dumps(summary(rows), indent=2))
    print("per probe, ms:", " ".join(("total", *STAGES)))
    for r in sorted(rows, key=lambda r: r["total"]):
        print(" ".join(f"{r[k]:7.1f}" for k in ("total", *STAGES)))


if __name__ == "__main__":
    main()
