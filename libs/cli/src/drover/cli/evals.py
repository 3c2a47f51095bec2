"""`drover eval list|status`: what the scheduler was asked to do, and why placements failed."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from drover.cli.api import seg
from drover.cli.common import (
    ADDRESS,
    NAMESPACE,
    Address,
    Filter,
    Json,
    Namespace,
    Verbose,
    client,
    echo,
    filtered,
    opt,
    resolve,
    verb,
)
from drover.cli.output import ago, as_json, date, failed_placements, kv, short, table


def eval_table(evals: list[dict[str, Any]], verbose: bool = False) -> str:
    rows = sorted(evals, key=lambda e: e.get("CreateIndex", 0), reverse=True)
    return table(
        ["ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures"],
        [
            [
                short(e["ID"], verbose),
                e["Priority"],
                e["TriggeredBy"],
                e.get("JobID", ""),
                e.get("Namespace", ""),
                short(e.get("NodeID") or "<none>", verbose),
                e["Status"],
                bool(e.get("FailedTGAllocs")),
            ]
            for e in rows
        ],
    )


@verb()
def list_evals(
    job: Annotated[str, opt("job", "Only this job's evals.")] = "",
    status: Annotated[str, opt("status", "Only evals in this status.")] = "",
    filter_: Filter = "",
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """List the evals, newest first."""
    with client(address, namespace) as c:
        where = filtered(filter_)
        evals = (
            c.get(f"/v1/job/{seg(job)}/evaluations", **where) if job else c.get("/v1/evaluations", **where)
        )
    if status:
        evals = [e for e in evals if e["Status"] == status]
    echo(as_json(evals) if as_json_flag else (eval_table(evals, verbose) if evals else "No evals found"))


def eval_detail(e: dict[str, Any], verbose: bool = False, now: float | None = None) -> str:
    pairs: list[tuple[str, Any]] = [
        ("ID", short(e["ID"], verbose)),
        ("Create Time", ago(e.get("CreateTime", 0), now)),
        ("Modify Time", ago(e.get("ModifyTime", 0), now)),
        ("Status", e["Status"]),
        ("Status Description", e.get("StatusDescription") or e["Status"]),
        ("Type", e["Type"]),
        ("TriggeredBy", e["TriggeredBy"]),
        ("Job ID", e.get("JobID", "")),
        ("Namespace", e.get("Namespace", "")),
        ("Priority", e["Priority"]),
        ("Placement Failures", bool(e.get("FailedTGAllocs"))),
    ]
    for key, label in (
        ("NodeID", "Node ID"),
        ("DeploymentID", "Deployment ID"),
        ("PreviousEval", "Previous Eval"),
        ("NextEval", "Next Eval"),
        ("BlockedEval", "Blocked Eval"),
    ):
        if e.get(key):
            pairs.append((label, short(e[key], verbose)))
    if e.get("WaitUntil"):
        pairs.append(("Wait Until", date(e["WaitUntil"])))
    parts = [kv(pairs)]
    if e.get("FailedTGAllocs"):
        parts.append("Failed Placements\n" + "\n".join(failed_placements(e["FailedTGAllocs"])))
    if e.get("QueuedAllocations"):
        queued = e["QueuedAllocations"]
        parts.append(
            "Queued Allocations\n" + table(["Task Group", "Queued"], [[g, queued[g]] for g in sorted(queued)])
        )
    return "\n\n".join(parts)


@verb()
def status(
    eval_id: Annotated[str, typer.Argument(metavar="<eval>", help="An eval's ID or a unique prefix of it.")],
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Show an eval: its status, what triggered it, the evals it links to, its placement failures."""
    with client(address, namespace) as c:
        e = c.get(f"/v1/evaluation/{seg(resolve(c, 'evaluation', eval_id)['ID'])}")
    echo(as_json(e) if as_json_flag else eval_detail(e, verbose))
