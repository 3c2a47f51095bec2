"""Following an eval, then the deployment it started, to their ends, as `nomad job run` does:
a line per change of the eval (its allocs created, its status), why placements failed, then the
deployment's progress (a live table on a terminal, a line per change otherwise) and its end.
Driven by blocking queries: each read answers once what it reads changed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.live import Live
from rich.text import Text

from drover.cli.api import ApiError, Client, seg
from drover.cli.common import EXIT_ERROR, EXIT_OK, EXIT_PLACEMENT, echo, out
from drover.cli.output import duration, failed_placements, kv, short, table

EVAL_TERMINAL = ("complete", "failed", "canceled", "cancelled")
DEPLOYMENT_TERMINAL = ("successful", "failed", "cancelled")
# How long following rides out an API it can't reach (one restarting) before giving up.
LOST_API_GRACE = 30.0


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def say(text: str, head: bool = False) -> None:
    echo(f"==> {_stamp()}: {text}" if head else f"    {_stamp()}: {text}")


@dataclass
class Outcome:
    """How the followed eval ended: its last state, and whether any group failed to place."""

    eval: dict[str, Any]
    failed: dict[str, Any] = field(default_factory=dict)


def read_blocking(c: Client, path: str, index: int) -> tuple[Any, int]:
    """A blocking read that rides out an API restarting (a refusal is raised at once)."""
    lost_at = 0.0
    while True:
        try:
            return c.get_indexed(path, index)
        except ApiError as e:
            lost_at = lost_at or time.monotonic()
            if 0 < e.status < 500 or time.monotonic() - lost_at > LOST_API_GRACE:
                raise
            time.sleep(1.0)


def follow_eval(c: Client, eval_id: str, verbose: bool = False) -> Outcome:
    """Print the eval's changes until it and the evals it chains to (NextEval) end."""
    say(f'Monitoring evaluation "{short(eval_id, verbose)}"', head=True)
    index, status, seen, told_deployment = 0, "", set[str](), False
    failed: dict[str, Any] = {}
    while True:
        evaluation, index = read_blocking(c, f"/v1/evaluation/{seg(eval_id)}", index)
        if not status:
            what = (
                f'node "{short(evaluation["NodeID"], verbose)}"'
                if evaluation.get("NodeID")
                else f'job "{evaluation["JobID"]}"'
            )
            say(f"Evaluation triggered by {what}")
        if evaluation.get("DeploymentID") and not told_deployment:
            say(f'Evaluation within deployment: "{short(evaluation["DeploymentID"], verbose)}"')
            told_deployment = True
        for a in c.get(f"/v1/evaluation/{seg(eval_id)}/allocations"):
            if a["ID"] not in seen:
                seen.add(a["ID"])
                what = "modified" if a.get("CreateIndex", 0) < evaluation.get("CreateIndex", 0) else "created"
                say(
                    f'Allocation "{short(a["ID"], verbose)}" {what}: node "{short(a["NodeID"], verbose)}", '
                    f'group "{a["TaskGroup"]}"'
                )
        if status and evaluation["Status"] != status:
            say(f'Evaluation status changed: "{status}" -> "{evaluation["Status"]}"')
        status = evaluation["Status"]
        if status not in EVAL_TERMINAL:
            continue
        failed |= evaluation.get("FailedTGAllocs") or {}
        if evaluation.get("NextEval") and status == "complete":
            wait = duration((evaluation.get("Wait") or 0) / 1e9)
            say(f'Monitoring next evaluation "{short(evaluation["NextEval"], verbose)}" in {wait}')
            eval_id, index, status = evaluation["NextEval"], 0, ""
            continue
        _finished(evaluation, failed, verbose)
        return Outcome(evaluation, failed)


def _finished(evaluation: dict[str, Any], failed: dict[str, Any], verbose: bool) -> None:
    name = short(evaluation["ID"], verbose)
    if not failed:
        say(f'Evaluation "{name}" finished with status "{evaluation["Status"]}"', head=True)
        return
    say(
        f'Evaluation "{name}" finished with status "{evaluation["Status"]}" but failed to place all allocations:',
        head=True,
    )
    for line in failed_placements(failed):
        echo(f"    {line}")
    if evaluation.get("BlockedEval"):
        echo(
            f'    Evaluation "{short(evaluation["BlockedEval"], verbose)}" waiting for additional capacity to place remainder'
        )


def deployment_table(d: dict[str, Any], now: float | None = None) -> str:
    """The `Deployed` table of a deployment, with Nomad's columns (canary ones when it has canaries)."""
    from drover.cli.output import in_time

    groups = d.get("TaskGroups") or {}
    canaries = any(g.get("DesiredCanaries") for g in groups.values())
    auto = any(g.get("AutoRevert") for g in groups.values())
    header = [
        "Task Group",
        *(["Auto Revert"] if auto else []),
        *(["Promoted"] if canaries else []),
        "Desired",
        *(["Canaries"] if canaries else []),
        "Placed",
        "Healthy",
        "Unhealthy",
        "Progress Deadline",
    ]
    rows = []
    for name in sorted(groups):
        g = groups[name]
        deadline = in_time(g.get("RequireProgressBy") or 0, now) if d["Status"] == "running" else ""
        rows.append(
            [
                name,
                *([g.get("AutoRevert", False)] if auto else []),
                *([g.get("Promoted", False)] if canaries else []),
                g.get("DesiredTotal", 0),
                *([len(g.get("PlacedCanaries") or [])] if canaries else []),
                g.get("PlacedAllocs", 0),
                g.get("HealthyAllocs", 0),
                g.get("UnhealthyAllocs", 0),
                deadline or "N/A",
            ]
        )
    return table(header, rows)


def deployment_block(d: dict[str, Any], verbose: bool = False) -> str:
    head = kv(
        [
            ("ID", short(d["ID"], verbose)),
            ("Job ID", d["JobID"]),
            ("Job Version", d["JobVersion"]),
            ("Status", d["Status"]),
            ("Description", d["StatusDescription"]),
        ]
    )
    return f"{head}\n\nDeployed\n{deployment_table(d)}"


def follow_deployment(c: Client, deployment_id: str, verbose: bool = False) -> dict[str, Any]:
    """Show the deployment until it ends; the ended deployment."""
    say(f'Monitoring deployment "{short(deployment_id, verbose)}"', head=True)
    path = f"/v1/deployment/{seg(deployment_id)}"
    index = 0
    if out.is_terminal:
        with Live(Text(""), console=out, auto_refresh=False, transient=True) as live:
            while True:
                d, index = read_blocking(c, path, index)
                live.update(Text(deployment_block(d, verbose)), refresh=True)
                if d["Status"] in DEPLOYMENT_TERMINAL:
                    break
    else:
        last = ""
        while True:
            d, index = read_blocking(c, path, index)
            line = _progress(d)
            if line != last:
                say(line)
                last = line
            if d["Status"] in DEPLOYMENT_TERMINAL:
                break
    mark = "✓" if d["Status"] == "successful" else "!"
    echo(f'  {mark} Deployment "{short(d["ID"], verbose)}" {d["Status"]}\n')
    echo("\n".join(f"    {line}".rstrip() for line in deployment_block(d, verbose).splitlines()))
    return dict(d)


def _progress(d: dict[str, Any]) -> str:
    """A deployment's state in one line: its status and each group's healthy of desired."""
    groups = d.get("TaskGroups") or {}
    counts = ", ".join(
        f"{name} {g.get('HealthyAllocs', 0)}/{g.get('DesiredTotal', 0)} healthy"
        + (f" {g['UnhealthyAllocs']} unhealthy" if g.get("UnhealthyAllocs") else "")
        for name, g in sorted(groups.items())
    )
    return f'Deployment "{d["ID"][:8]}" {d["Status"]}: {counts}' if counts else f"Deployment {d['Status']}"


def follow(c: Client, eval_id: str, verbose: bool = False) -> int:
    """Follow the eval and, for a service job, its deployment; the exit code: 0 done, 2 some
    allocs could not be placed, 1 the eval or the deployment failed."""
    outcome = follow_eval(c, eval_id, verbose)
    if outcome.failed:
        return EXIT_PLACEMENT
    if outcome.eval["Status"] != "complete":
        return EXIT_ERROR
    deployment_id = outcome.eval.get("DeploymentID") or ""
    if not deployment_id and outcome.eval.get("Type") == "service" and outcome.eval.get("JobID"):
        deployment_id = _latest_deployment(c, outcome.eval)
    if not deployment_id:
        return EXIT_OK
    d = follow_deployment(c, deployment_id, verbose)
    return EXIT_OK if d["Status"] == "successful" else EXIT_ERROR


def _latest_deployment(c: Client, evaluation: dict[str, Any]) -> str:
    """The job's deployment this eval created, if it created one (its JobModifyIndex is the
    job's version the eval scheduled)."""
    try:
        d = c.get(f"/v1/job/{seg(evaluation['JobID'])}/deployment")
    except ApiError as e:
        if e.status == 404:
            return ""
        raise
    if not d or d.get("CreateIndex", 0) < evaluation.get("CreateIndex", 0):
        return ""
    return str(d["ID"])
