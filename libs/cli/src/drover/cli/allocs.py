"""`drover alloc status|stop|restart`: one allocation, by its ID or a unique prefix of it."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from drover.cli import monitor
from drover.cli.api import seg
from drover.cli.common import (
    ADDRESS,
    NAMESPACE,
    Address,
    Detach,
    Json,
    Namespace,
    Verbose,
    client,
    echo,
    opt,
    resolve,
    verb,
)
from drover.cli.output import ago, as_json, date, kv, short, table

AllocId = Annotated[str, typer.Argument(metavar="<alloc>", help="An alloc's ID or a unique prefix of it.")]
_ZERO_TIME = ("", "0001-01-01T00:00:00Z")


def alloc_head(a: dict[str, Any], verbose: bool = False, now: float | None = None) -> str:
    health = (a.get("DeploymentStatus") or {}).get("Healthy")
    pairs: list[tuple[str, Any]] = [
        ("ID", short(a["ID"], verbose)),
        ("Eval ID", short(a.get("EvalID", ""), verbose)),
        ("Name", a["Name"]),
        ("Node ID", short(a["NodeID"], verbose)),
        ("Node Name", a.get("NodeName", "")),
        ("Job ID", a["JobID"]),
        ("Job Version", a.get("JobVersion", 0)),
        ("Client Status", a["ClientStatus"]),
        ("Client Description", a.get("ClientDescription") or "<none>"),
        ("Desired Status", a["DesiredStatus"]),
        ("Desired Description", a.get("DesiredDescription") or "<none>"),
        ("Created", ago(a.get("CreateTime", 0), now)),
        ("Modified", ago(a.get("ModifyTime", 0), now)),
    ]
    if a.get("DeploymentID"):
        pairs += [
            ("Deployment ID", short(a["DeploymentID"], verbose)),
            ("Deployment Health", "unset" if health is None else ("healthy" if health else "unhealthy")),
        ]
    if a.get("PreviousAllocation"):
        pairs.append(("Replacement Of", short(a["PreviousAllocation"], verbose)))
    if a.get("NextAllocation"):
        pairs.append(("Replaced By", short(a["NextAllocation"], verbose)))
    if a.get("FollowupEvalID"):
        pairs.append(("Follow-up Eval", short(a["FollowupEvalID"], verbose)))
    return kv(pairs)


def task_time(value: Any) -> str:
    if isinstance(value, int):
        return date(value) or "N/A"
    # An RFC 3339 time to the second, as Nomad prints it.
    return (
        "N/A"
        if value in _ZERO_TIME or value is None
        else re.sub(r"\.\d+(?=Z|[+-]\d\d:\d\d$)", "", str(value))
    )


def task_block(name: str, state: dict[str, Any]) -> str:
    """A task's state and its recent events (newest first), as `nomad alloc status` shows them."""
    head = kv(
        [
            ("Started At", task_time(state.get("StartedAt"))),
            ("Finished At", task_time(state.get("FinishedAt"))),
            ("Total Restarts", state.get("Restarts", 0)),
            ("Last Restart", task_time(state.get("LastRestart"))),
        ]
    )
    events = sorted(state.get("Events") or [], key=lambda e: e.get("Time", 0), reverse=True)[:10]
    rows = [
        [date(e.get("Time", 0)), e.get("Type", ""), e.get("DisplayMessage") or e.get("Message", "")]
        for e in events
    ]
    recent = table(["Time", "Type", "Description"], rows) if rows else "No events"
    return f'Task "{name}" is "{state.get("State", "pending")}"\nTask Events:\n{head}\n\nRecent Events:\n{recent}'


@verb()
def status(
    alloc_id: AllocId,
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Show an alloc: where it runs, its statuses, and each task's state and events."""
    with client(address, namespace) as c:
        a = c.get(f"/v1/allocation/{seg(resolve(c, 'allocation', alloc_id)['ID'])}")
    if as_json_flag:
        echo(as_json(a))
        return
    parts = [alloc_head(a, verbose)]
    res = a.get("Resources") or {}
    if res:
        parts.append(
            "Allocation Resources\n"
            + table(
                ["CPU", "Memory", "Disk"],
                [
                    [
                        f"{res.get('CPU', 0)} MHz",
                        f"{res.get('MemoryMB', 0)} MiB",
                        f"{res.get('DiskMB', 0)} MiB",
                    ]
                ],
            )
        )
    addresses = alloc_addresses(a)
    if addresses:
        parts.append(addresses)
    states = a.get("TaskStates") or {}
    parts += [task_block(name, states[name]) for name in sorted(states)]
    echo("\n\n".join(parts))


def alloc_addresses(a: dict[str, Any]) -> str:
    """The alloc's ports as `nomad alloc status` lists them: label, whether dynamic, and the
    host address (with the port it maps to inside the task); "" without ports."""
    shared = (a.get("AllocatedResources") or {}).get("Shared") or {}
    networks = shared.get("Networks") or []
    dynamic = {p.get("Label") for n in networks for p in n.get("DynamicPorts") or []}
    rows = []
    for p in shared.get("Ports") or []:
        address = f"{p.get('HostIP', '')}:{p.get('Value', 0)}"
        if p.get("To", 0) > 0:
            address += f" -> {p['To']}"
        rows.append([p.get("Label", ""), "yes" if p.get("Label") in dynamic else "no", address])
    return "Allocation Addresses:\n" + table(["Label", "Dynamic", "Address"], rows) if rows else ""


@verb()
def stop(
    alloc_id: AllocId,
    detach: Detach = False,
    verbose: Verbose = False,
    no_shutdown_delay: Annotated[bool, opt("no-shutdown-delay", "Skip the group's shutdown delay.")] = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Stop an alloc: the scheduler replaces it. Follows the eval unless -detach."""
    with client(address, namespace) as c:
        full = resolve(c, "allocation", alloc_id)["ID"]
        params = {"no_shutdown_delay": "true"} if no_shutdown_delay else {}
        r = c.post(f"/v1/allocation/{seg(full)}/stop", **params)
        if detach:
            echo(f"Evaluation ID: {r['EvalID']}")
            return
        code = monitor.follow(c, r["EvalID"], verbose)
    if code:
        raise typer.Exit(code)


@verb()
def restart(
    alloc_id: AllocId,
    task: Annotated[str | None, typer.Argument(metavar="[<task>]", show_default=False)] = None,
    task_flag: Annotated[str | None, opt("task", "The task to restart.")] = None,
    all_tasks: Annotated[bool, opt("all-tasks", "Restart every task, not only the running ones.")] = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Restart an alloc's tasks in place (one task if named)."""
    name = task_flag or task or ""
    with client(address, namespace) as c:
        full = resolve(c, "allocation", alloc_id)["ID"]
        c.post(f"/v1/client/allocation/{seg(full)}/restart", {"TaskName": name, "AllTasks": all_tasks})
    echo(f'Restarted {f"task {name!r} of " if name else ""}alloc "{short(full)}"')
