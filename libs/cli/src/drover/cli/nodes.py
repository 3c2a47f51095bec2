"""`drover node status|drain|eligibility`: the client nodes, their allocs, drains and
scheduling eligibility."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from drover.cli.api import Client, seg
from drover.cli.common import (
    ADDRESS,
    NAMESPACE,
    Address,
    Detach,
    Filter,
    Json,
    Namespace,
    Problem,
    Verbose,
    client,
    confirm,
    echo,
    filtered,
    opt,
    resolve,
    verb,
)
from drover.cli.jobs import allocs_table
from drover.cli.monitor import read_blocking, say
from drover.cli.output import as_json, date, kv, short, table

NodeId = Annotated[str, typer.Argument(metavar="<node>", help="A node's ID or a unique prefix of it.")]
NS_PER_S = 1_000_000_000


def node_table(nodes: list[dict[str, Any]], verbose: bool = False) -> str:
    header = [
        "ID",
        "Node Pool",
        "DC",
        "Name",
        "Class",
        *(["Address", "Version"] if verbose else []),
        "Drain",
        "Eligibility",
        "Status",
    ]
    rows = [
        [
            short(n["ID"], verbose),
            n.get("NodePool") or "default",
            n["Datacenter"],
            n["Name"],
            n.get("NodeClass") or "<none>",
            *([n.get("Address") or n.get("HTTPAddr") or "", n.get("Version") or ""] if verbose else []),
            n.get("Drain", False),
            n["SchedulingEligibility"],
            n["Status"],
        ]
        for n in nodes
    ]
    return table(header, rows)


def node_detail(n: dict[str, Any], allocs: list[dict[str, Any]], verbose: bool = False) -> str:
    drain = n.get("DrainStrategy")
    pairs: list[tuple[str, Any]] = [
        ("ID", short(n["ID"], verbose)),
        ("Name", n["Name"]),
        ("Node Pool", n.get("NodePool") or "default"),
        ("Class", n.get("NodeClass") or "<none>"),
        ("DC", n["Datacenter"]),
        ("Drain", _drain_text(drain)),
        ("Eligibility", n["SchedulingEligibility"]),
        ("Status", n["Status"]),
        (
            "Drivers",
            ",".join(
                sorted(
                    d for d, info in (n.get("Drivers") or {}).items() if (info or {}).get("Detected", True)
                )
            ),
        ),
    ]
    if n.get("HTTPAddr"):
        pairs.insert(5, ("Address", n["HTTPAddr"]))
    parts = [kv(pairs)]
    live = [a for a in allocs if a["DesiredStatus"] == "run" and a["ClientStatus"] in ("pending", "running")]
    parts.append("Allocated Resources\n" + _resources(n, live))
    parts.append("Allocations\n" + (allocs_table(allocs, verbose) if allocs else "No allocations placed"))
    if verbose:
        attrs = n.get("Attributes") or {}
        parts.append("Attributes\n" + kv(sorted(attrs.items())))
        if n.get("Meta"):
            parts.append("Meta\n" + kv(sorted(n["Meta"].items())))
    return "\n\n".join(parts)


def _drain_text(drain: dict[str, Any] | None) -> str:
    if not drain:
        return "false"
    deadline = drain.get("ForceDeadline") or 0
    return f"true; {date(deadline)} deadline" if deadline and deadline > 0 else "true; no deadline"


def _resources(n: dict[str, Any], live: list[dict[str, Any]]) -> str:
    """What the live allocs use of the node's capacity, as `nomad node status` shows it."""
    res = n.get("NodeResources") or {}
    cpu = (res.get("Cpu") or {}).get("CpuShares", 0)
    mem = (res.get("Memory") or {}).get("MemoryMB", 0)
    disk = (res.get("Disk") or {}).get("DiskMB", 0)
    used = [
        sum(int((a.get("Resources") or {}).get(k, 0)) for a in live) for k in ("CPU", "MemoryMB", "DiskMB")
    ]
    return table(
        ["CPU", "Memory", "Disk"],
        [[f"{used[0]}/{cpu} MHz", f"{used[1]} MiB/{mem} MiB", f"{used[2]} MiB/{disk} MiB"]],
    )


@verb()
def status(
    node_id: Annotated[str | None, typer.Argument(metavar="[<node>]", show_default=False)] = None,
    filter_: Filter = "",
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """List the nodes, or show one: its drain, eligibility, resources and allocs."""
    with client(address, namespace) as c:
        if node_id is None:
            nodes = c.get("/v1/nodes", **filtered(filter_))
            echo(
                as_json(nodes)
                if as_json_flag
                else (node_table(nodes, verbose) if nodes else "No nodes registered")
            )
            return
        full = resolve(c, "node", node_id)["ID"]
        n = c.get(f"/v1/node/{seg(full)}")
        allocs = c.get(f"/v1/node/{seg(full)}/allocations")
    echo(as_json(n) if as_json_flag else node_detail(n, allocs, verbose))


def parse_duration(text: str) -> int:
    """A Go duration ("1h", "30m", "90s", "1h30m", "500ms") in nanoseconds."""
    units = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": NS_PER_S, "m": 60 * NS_PER_S, "h": 3600 * NS_PER_S}
    rest, total, number = text.strip(), 0.0, ""
    if not rest:
        raise Problem("a duration can't be empty")
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = next((u for u in ("ns", "us", "ms", "h", "m", "s") if rest.startswith(u)), None)
        if not number or unit is None:
            raise Problem(f"{text!r} is not a duration (as 1h30m, 90s, 500ms)")
        total += float(number) * units[unit]
        rest = rest[len(unit) :]
    return int(total)


@verb()
def drain(
    node_id: NodeId,
    enable: Annotated[bool, opt("enable", "Start draining the node.")] = False,
    disable: Annotated[bool, opt("disable", "Stop draining the node.")] = False,
    deadline: Annotated[str, opt("deadline", "Stop what is left after this long.", metavar="d")] = "1h",
    no_deadline: Annotated[bool, opt("no-deadline", "Wait for the allocs however long.")] = False,
    force: Annotated[bool, opt("force", "Stop every alloc now.")] = False,
    ignore_system: Annotated[bool, opt("ignore-system", "Leave the system jobs' allocs.")] = False,
    keep_ineligible: Annotated[bool, opt("keep-ineligible", "-disable leaves it ineligible.")] = False,
    yes: Annotated[bool, opt("yes", "Don't ask for confirmation.")] = False,
    detach: Detach = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Drain a node (-enable) or stop draining it (-disable); follows the drain unless -detach."""
    if enable == disable:
        raise Problem("give one of -enable or -disable")
    if enable and sum((force, no_deadline)) > 1:
        raise Problem("-force and -no-deadline don't go together")
    spec = None
    if enable:
        ns = -1 if force else 0 if no_deadline else parse_duration(deadline)
        spec = {"Deadline": ns, "IgnoreSystemJobs": ignore_system}
    with client(address, namespace) as c:
        full = resolve(c, "node", node_id)["ID"]
        if full != node_id:
            confirm(
                f'Are you sure you want to {"enable" if enable else "disable"} drain mode for node "{full}"?',
                yes,
            )
        c.put(
            f"/v1/node/{seg(full)}/drain",
            {"DrainSpec": spec, "MarkEligible": disable and not keep_ineligible},
        )
        echo(f'Node "{full}" drain strategy {"set" if enable else "unset"}')
        if enable and not detach:
            _follow_drain(c, full)


def _follow_drain(c: Client, node_id: str) -> None:
    """A line each time the count of the node's allocs still to move changes, until the drain ends."""
    index, last = 0, -1
    while True:
        n, index = read_blocking(c, f"/v1/node/{seg(node_id)}", index)
        left = [
            a
            for a in c.get(f"/v1/node/{seg(node_id)}/allocations")
            if a["DesiredStatus"] == "run" and a["ClientStatus"] in ("pending", "running")
        ]
        if len(left) != last:
            last = len(left)
            say(f'Node "{short(node_id)}": {last} allocation{"" if last == 1 else "s"} left to migrate')
        if not n.get("DrainStrategy"):
            say(f'Node "{node_id}" drain complete', head=True)
            return


@verb()
def eligibility(
    node_id: NodeId,
    enable: Annotated[bool, opt("enable", "Let the scheduler place allocs on the node.")] = False,
    disable: Annotated[bool, opt("disable", "Place no new allocs on the node.")] = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Mark a node eligible for scheduling or not (its running allocs stay)."""
    if enable == disable:
        raise Problem("give one of -enable or -disable")
    with client(address, namespace) as c:
        full = resolve(c, "node", node_id)["ID"]
        value = "eligible" if enable else "ineligible"
        c.put(f"/v1/node/{seg(full)}/eligibility", {"Eligibility": value})
    echo(f'Node "{full}" scheduling eligibility set: {value} for scheduling')
