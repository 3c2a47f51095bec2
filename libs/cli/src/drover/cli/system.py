"""`drover system gc` and `drover status`: the cluster's health as the API shows it - the log's
position, each service process's position and lag behind it (and which lead), and what the
cluster holds - read from /v1/status/leader and /v1/metrics?format=json - and whether the API
reaches its PostgreSQL and NATS (/v1/agent/health), named when it does not."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Annotated, Any

import typer

from drover.cli import allocs, deployments, evals, jobs, namespaces, nodes
from drover.cli.api import ApiError
from drover.cli.common import (
    ADDRESS,
    NAMESPACE,
    Address,
    Json,
    Namespace,
    Problem,
    Verbose,
    client,
    echo,
    verb,
)
from drover.cli.output import as_json, kv, table

# Services that run as a leader and standbys: only the leader publishes its metrics.
LEADER_ELECTED = ("planner", "leader", "gc")


@verb()
def gc(address: Address = ADDRESS, namespace: Namespace = NAMESPACE) -> None:
    """Collect what has ended now (terminal evals, dead jobs, ended deployments, down nodes)."""
    with client(address, namespace) as c:
        c.put("/v1/system/gc")


def health(leader: str, metrics: dict[str, Any], servers: str = "") -> dict[str, Any]:
    """The cluster's health from the leader's address and the metrics' JSON: the log position,
    each process's role, position and lag, and the cluster's counts; `servers` is why the API
    cannot reach its backing servers ("" when it can)."""
    gauges = metrics.get("Gauges") or []
    position = next((int(g["Value"]) for g in gauges if g["Name"] == "drover.log.position"), 0)
    procs: dict[tuple[str, str], dict[str, Any]] = {}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for g in gauges:
        labels, name = g.get("Labels") or {}, g["Name"]
        if "service" in labels:
            key = (labels["service"], labels.get("instance", ""))
            p = procs.setdefault(key, {"Service": key[0], "Instance": key[1], "Position": None, "Lag": None})
            if name.endswith(".position"):
                p["Position"] = int(g["Value"])
            elif name.endswith(".lag"):
                p["Lag"] = int(g["Value"])
        for kind, label in (("nodes", "status"), ("allocs", "client_status"), ("evals", "status")):
            if name == f"drover.{kind}" and label in labels:
                counts[kind][labels[label]] += int(g["Value"])
    services = []
    for (service, _), p in sorted(procs.items()):
        role = "leader" if service in LEADER_ELECTED else ("relay" if service == "relay" else "replica")
        services.append({**p, "Role": role})
    return {
        "Leader": leader,
        "Servers": servers or "ok",
        "Index": position,
        "Services": services,
        "Nodes": dict(counts["nodes"]),
        "Allocations": dict(counts["allocs"]),
        "Evaluations": dict(counts["evals"]),
    }


def health_text(h: dict[str, Any]) -> str:
    missing = [
        s
        for s in ("relay", "broker", "worker", *LEADER_ELECTED)
        if s not in {p["Service"] for p in h["Services"]}
    ]
    head = kv(
        [
            ("API", h["Leader"]),
            ("Servers", h["Servers"]),
            ("Log Index", h["Index"]),
            ("Missing", ", ".join(missing) if missing else "none"),
        ]
    )
    rows = [
        [
            p["Service"],
            p["Instance"],
            p["Role"],
            "" if p["Position"] is None else p["Position"],
            "" if p["Lag"] is None else p["Lag"],
        ]
        for p in h["Services"]
    ]
    procs = (
        table(["Service", "Instance", "Role", "Position", "Lag"], rows)
        if rows
        else "No service reports metrics"
    )

    def by(kind: str) -> str:
        counts = h[kind]
        return ", ".join(f"{counts[k]} {k}" for k in sorted(counts) if counts[k]) or "none"

    cluster = kv(
        [("Nodes", by("Nodes")), ("Allocations", by("Allocations")), ("Evaluations", by("Evaluations"))]
    )
    return f"{head}\n\nServices\n{procs}\n\nCluster\n{cluster}"


def _problem(answer: str) -> str:
    """The server's message of /v1/agent/health's unhealthy answer (its document as text)."""
    try:
        return str(json.loads(answer)["server"]["message"])
    except (ValueError, KeyError, TypeError):
        return answer


# What `drover status <prefix>` can show, by Nomad's search context, in the order it looks.
_KINDS = {"jobs": "job", "evals": "evaluation", "allocs": "allocation", "nodes": "node",
          "deployment": "deployment", "namespaces": "namespace"}  # fmt: skip


@verb()
def status(
    identifier: Annotated[
        str | None,
        typer.Argument(
            metavar="[<id>]",
            help="A job, eval, alloc, node, deployment or namespace, or a prefix of its ID.",
            show_default=False,
        ),
    ] = None,
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """The cluster's health: each service's processes, the leaders, their lag behind the log;
    or, given an ID or a prefix of one, that object, whatever it is (Nomad's `status <id>`,
    found through /v1/search).

    A leader-elected service (planner, leader, gc) shows only its leader: standbys report
    nothing until they lead. A service missing has no process reporting (down, or starting)."""
    if identifier is not None:
        _status_of(identifier, as_json_flag, verbose, address, namespace)
        return
    with client(address, namespace) as c:
        leader = c.get("/v1/status/leader")
        try:
            c.get("/v1/agent/health", type="server")
            servers = ""
        except ApiError as e:
            if e.status != 500:
                raise
            servers = _problem(e.message)
        # Metrics come through NATS: with it down, the services are shown missing, and why.
        try:
            metrics = c.get("/v1/metrics", format="json")
        except ApiError as e:
            if e.status < 500 or not servers:
                raise
            metrics = {}
    h = health(str(leader), metrics, servers)
    echo(as_json(h) if as_json_flag else health_text(h))


def _status_of(identifier: str, as_json_flag: bool, verbose: bool, address: str, namespace: str) -> None:
    """The one object whose ID `identifier` is or starts, shown by its own verb; every match
    listed when it names several (one whose ID it is whole wins)."""
    with client(address, namespace) as c:
        found = c.post("/v1/search", {"Prefix": identifier, "Context": "all"})["Matches"]
    hits = [(ctx, i) for ctx in _KINDS for i in found.get(ctx) or []]
    hits = [h for h in hits if h[1] == identifier] or hits
    if not hits:
        raise Problem(f'No matches for "{identifier}" in namespace "{namespace}"')
    if len(hits) > 1:
        listed = "\n".join(f"{_KINDS[ctx]}: {i}" for ctx, i in hits)
        raise Problem(f'Prefix "{identifier}" matched multiple objects:\n{listed}')
    ctx, found_id = hits[0]
    if ctx == "namespaces":
        namespaces.status(found_id, address=address, json_=as_json_flag)
    elif ctx == "jobs":
        jobs.status(found_id, as_json=as_json_flag, verbose=verbose, address=address, namespace=namespace)
    else:
        verbs: dict[str, Callable[..., None]] = {"evals": evals.status, "allocs": allocs.status,
                                                 "nodes": nodes.status, "deployment": deployments.status}  # fmt: skip
        show = verbs[ctx]
        show(found_id, as_json_flag=as_json_flag, verbose=verbose, address=address, namespace=namespace)
