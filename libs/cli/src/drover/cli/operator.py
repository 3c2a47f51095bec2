"""`drover operator scheduler get-config|set-config`, `drover node pool
list|info|apply|delete|nodes|jobs` and `drover server members`, as Nomad's commands: the
scheduler configuration (set-config merges the flags given onto the configuration read, and
writes it back with a check-and-set on its ModifyIndex), node pools (applied from a
`node_pool "name" { ... }` HCL file, or JSON with -json), and the API servers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from drover.cli.api import Client, seg
from drover.cli.common import ADDRESS, NAMESPACE, Address, Json, Namespace, Problem, client, echo, opt, verb
from drover.cli.jobs import job_list_table
from drover.cli.nodes import node_table
from drover.cli.output import as_json, kv, table

SCHEDULER_CONFIG = "/v1/operator/scheduler/configuration"
PoolName = Annotated[
    str, typer.Argument(metavar="<node-pool>", help="A node pool's name or a unique prefix of it.")
]


def _bool(value: str) -> bool:
    """A flag's value as Go's strconv.ParseBool reads it."""
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise Problem(f"{value!r} is not a boolean (true or false)")


def _flag(name: str, help: str) -> Any:
    """A boolean set by value, as Nomad's (`-pause-eval-broker=true`, `-pause-eval-broker false`)."""
    return opt(name, help, metavar="true|false")


# --- drover operator scheduler ---
def config_text(config: dict[str, Any]) -> str:
    preemption = config.get("PreemptionConfig") or {}
    return kv([
        ("Scheduler Algorithm", config.get("SchedulerAlgorithm", "")),
        ("Memory Oversubscription", config.get("MemoryOversubscriptionEnabled", False)),
        ("Reject Job Registration", config.get("RejectJobRegistration", False)),
        ("Pause Eval Broker", config.get("PauseEvalBroker", False)),
        ("Preemption System Scheduler", preemption.get("SystemSchedulerEnabled", False)),
        ("Preemption Service Scheduler", preemption.get("ServiceSchedulerEnabled", False)),
        ("Preemption Batch Scheduler", preemption.get("BatchSchedulerEnabled", False)),
        ("Preemption SysBatch Scheduler", preemption.get("SysBatchSchedulerEnabled", False)),
        ("Node Limit For Feasibility Checks", config.get("NodeLimitForFeasibilityChecks", 0)),
        ("Node Scoring", config.get("NodeScoring", "")),
        ("Modify Index", config.get("ModifyIndex", 0)),
    ])  # fmt: skip


@verb()
def get_config(address: Address = ADDRESS, json_: Json = False) -> None:
    """Display the scheduler configuration."""
    with client(address) as c:
        answer = c.get(SCHEDULER_CONFIG)
    echo(as_json(answer) if json_ else config_text(answer["SchedulerConfig"]))


@verb()
def set_config(
    address: Address = ADDRESS,
    check_index: Annotated[
        int | None, opt("check-index", "Update only if the ModifyIndex is still this.")
    ] = None,
    scheduler_algorithm: Annotated[str | None, opt("scheduler-algorithm", "binpack or spread.")] = None,
    memory_oversubscription: Annotated[
        str | None, _flag("memory-oversubscription", "Give tasks their memory_max.")
    ] = None,
    reject_job_registration: Annotated[
        str | None, _flag("reject-job-registration", "Refuse registrations, dispatches and scales.")
    ] = None,
    pause_eval_broker: Annotated[str | None, _flag("pause-eval-broker", "Hand out no evals.")] = None,
    preempt_batch_scheduler: Annotated[
        str | None, _flag("preempt-batch-scheduler", "Batch jobs may preempt.")
    ] = None,
    preempt_service_scheduler: Annotated[
        str | None, _flag("preempt-service-scheduler", "Service jobs may preempt.")
    ] = None,
    preempt_sysbatch_scheduler: Annotated[
        str | None, _flag("preempt-sysbatch-scheduler", "Sysbatch jobs may preempt.")
    ] = None,
    preempt_system_scheduler: Annotated[
        str | None, _flag("preempt-system-scheduler", "System jobs may preempt.")
    ] = None,
    node_limit_for_feasibility_checks: Annotated[
        int | None, opt("node-limit-for-feasibility-checks", "Nodes scored per spread or affinity placement.")
    ] = None,
    node_scoring: Annotated[
        str | None,
        opt("node-scoring", "all (every feasible node scored) or limit (Nomad's few random ones)."),
    ] = None,
) -> None:
    """Modify the scheduler configuration: the flags given, on the configuration as it is."""
    with client(address) as c:
        config = dict(c.get(SCHEDULER_CONFIG)["SchedulerConfig"])
        if check_index is not None and check_index > 0 and config["ModifyIndex"] != check_index:
            raise Problem(
                f"Error performing check index set: check-index {check_index} does not match current state "
                f"value {config['ModifyIndex']}"
            )
        preemption = dict(config.get("PreemptionConfig") or {})
        for key, value in (
            ("SchedulerAlgorithm", scheduler_algorithm),
            ("NodeLimitForFeasibilityChecks", node_limit_for_feasibility_checks),
            ("NodeScoring", node_scoring),
        ):
            if value is not None:
                config[key] = value
        for target, key, flag in (
            (config, "MemoryOversubscriptionEnabled", memory_oversubscription),
            (config, "RejectJobRegistration", reject_job_registration),
            (config, "PauseEvalBroker", pause_eval_broker),
            (preemption, "BatchSchedulerEnabled", preempt_batch_scheduler),
            (preemption, "ServiceSchedulerEnabled", preempt_service_scheduler),
            (preemption, "SysBatchSchedulerEnabled", preempt_sysbatch_scheduler),
            (preemption, "SystemSchedulerEnabled", preempt_system_scheduler),
        ):
            if flag is not None:
                target[key] = _bool(flag)
        config["PreemptionConfig"] = preemption
        answer = c.put(SCHEDULER_CONFIG, config, cas=config["ModifyIndex"])
    if not answer["Updated"]:
        echo("Scheduler configuration could not be atomically updated, please try again")
        raise typer.Exit(1)
    echo("Scheduler configuration updated!")


# --- drover node pool ---
def pool_table(pools: list[dict[str, Any]]) -> str:
    return table(["Name", "Description"], [[p["Name"], p.get("Description", "")] for p in pools])


def pool_text(pool: dict[str, Any]) -> str:
    basic: list[tuple[str, Any]] = [("Name", pool["Name"]), ("Description", pool.get("Description", ""))]
    ttl = pool.get("NodeIdentityTTL") or 0
    if ttl:
        basic.append(("Node Identity TTL", _duration(ttl)))
    meta = pool.get("Meta") or {}
    sc = pool.get("SchedulerConfiguration")
    sched = "No scheduler configuration"
    if sc is not None:
        rows: list[tuple[str, Any]] = [("Scheduler Algorithm", sc.get("SchedulerAlgorithm", ""))]
        if sc.get("MemoryOversubscriptionEnabled") is not None:
            rows.append(("Memory Oversubscription Enabled", sc["MemoryOversubscriptionEnabled"]))
        sched = kv(rows)
    return "\n".join([
        kv(basic), "", "Metadata", kv(sorted(meta.items())) if meta else "No metadata",
        "", "Scheduler Configuration", sched,
    ])  # fmt: skip


def _duration(ns: int) -> str:
    """Nanoseconds as Go prints a duration ("24h0m0s")."""
    seconds = ns // 1_000_000_000
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m}m{s}s" if h else f"{m}m{s}s" if m else f"{s}s"


def _find_pool(c: Client, prefix: str) -> dict[str, Any]:
    """The pool `prefix` names: the one whose name it is, or the only one it starts."""
    pools = c.get("/v1/node/pools", prefix=prefix)
    exact = [p for p in pools if p["Name"] == prefix]
    if exact or len(pools) == 1:
        return dict((exact or pools)[0])
    if not pools:
        raise Problem(f'Error retrieving node pool: No node pool with prefix "{prefix}" found')
    raise Problem(f"Prefix matched multiple node pools\n\n{pool_table(pools)}")


@verb()
def pool_list(address: Address = ADDRESS, json_: Json = False) -> None:
    """List node pools."""
    with client(address) as c:
        pools = c.get("/v1/node/pools")
    echo(as_json(pools) if json_ else pool_table(pools))


@verb()
def pool_info(pool: PoolName, address: Address = ADDRESS, json_: Json = False) -> None:
    """Show a node pool."""
    with client(address) as c:
        found = _find_pool(c, pool)
    echo(as_json(found) if json_ else pool_text(found))


def read_pool_spec(path: str, as_json_input: bool) -> dict[str, Any]:
    """A node pool spec file (`-` is stdin) as the API's NodePool JSON: HCL's
    `node_pool "name" { description, meta {}, node_identity_ttl, scheduler_config {} }`, or
    the JSON itself with `json`."""
    import json

    from drover.jobspec import JobspecError, parse_document

    content = sys.stdin.read() if path == "-" else Path(path).read_text()
    if as_json_input:
        try:
            given = json.loads(content)
        except ValueError as e:
            raise Problem(f"Failed to parse input content: {e}") from None
        if not isinstance(given, dict):
            raise Problem("Failed to parse input content: a node pool is a JSON object")
        return given
    try:
        doc = parse_document(content, filename="stdin.nomad.hcl" if path == "-" else path)
    except JobspecError as e:
        raise Problem(f"Failed to parse input content: {e}") from None
    blocks = doc.get("node_pool") or []
    if len(blocks) != 1 or len(blocks[0]) != 1:
        raise Problem('Failed to parse input content: expected one node_pool "<name>" { ... } block')
    ((name, body),) = blocks[0].items()
    spec: dict[str, Any] = {"Name": name, "Description": body.get("description", "")}
    if body.get("meta"):
        spec["Meta"] = {k: str(v) for block in body["meta"] for k, v in block.items()}
    if "node_identity_ttl" in body:
        spec["NodeIdentityTTL"] = body["node_identity_ttl"]
    if body.get("scheduler_config"):
        (sc,) = body["scheduler_config"]
        spec["SchedulerConfiguration"] = {
            "SchedulerAlgorithm": sc.get("scheduler_algorithm", ""),
            **({"MemoryOversubscriptionEnabled": sc["memory_oversubscription_enabled"]}
               if "memory_oversubscription_enabled" in sc else {}),
        }  # fmt: skip
    return spec


@verb()
def pool_apply(
    input: Annotated[str, typer.Argument(metavar="<input>", help="A node pool spec file, or - for stdin.")],
    address: Address = ADDRESS,
    json_: Annotated[bool, opt("json", "The input is the NodePool's JSON.")] = False,
) -> None:
    """Create or update a node pool from a spec file."""
    spec = read_pool_spec(input, json_)
    with client(address) as c:
        c.put(f"/v1/node/pool/{seg(spec.get('Name', ''))}", spec)
    echo(f'Successfully applied node pool "{spec.get("Name", "")}"!')


@verb()
def pool_delete(
    pool: Annotated[str, typer.Argument(metavar="<node-pool>")], address: Address = ADDRESS
) -> None:
    """Delete a node pool (no node in it, no job of it still running)."""
    with client(address) as c:
        c.delete(f"/v1/node/pool/{seg(pool)}")
    echo(f'Successfully deleted node pool "{pool}"!')


@verb()
def pool_nodes(pool: PoolName, address: Address = ADDRESS, json_: Json = False) -> None:
    """List the nodes of a node pool."""
    with client(address) as c:
        name = _find_pool(c, pool)["Name"]
        nodes = c.get(f"/v1/node/pool/{seg(name)}/nodes")
    if json_:
        echo(as_json(nodes))
    else:
        echo(node_table(nodes) if nodes else f'No nodes in node pool "{name}"')


@verb()
def pool_jobs(
    pool: PoolName, address: Address = ADDRESS, namespace: Namespace = NAMESPACE, json_: Json = False
) -> None:
    """List the jobs of a node pool (-namespace '*': of every namespace)."""
    with client(address, namespace) as c:
        name = _find_pool(c, pool)["Name"]
        jobs = c.get(f"/v1/node/pool/{seg(name)}/jobs")
    if json_:
        echo(as_json(jobs))
    else:
        echo(job_list_table(jobs) if jobs else "No jobs found")


# --- drover server ---
def members_table(members: list[dict[str, Any]], leader: str) -> str:
    rows = [
        [
            m["Name"], m["Addr"], m["Port"], m["Status"], f"{m['Addr']}:{m['Port']}" == leader,
            (m.get("Tags") or {}).get("raft_vsn", ""), (m.get("Tags") or {}).get("build", ""),
            (m.get("Tags") or {}).get("dc", ""), (m.get("Tags") or {}).get("region", ""),
        ]
        for m in members
    ]  # fmt: skip
    return table(
        ["Name", "Address", "Port", "Status", "Leader", "Raft Version", "Build", "Datacenter", "Region"], rows
    )


@verb()
def server_members(address: Address = ADDRESS, json_: Json = False) -> None:
    """The API servers, as Nomad's server members."""
    with client(address) as c:
        members = c.get("/v1/agent/members")["Members"]
        leader = c.get("/v1/status/leader")
    echo(as_json(members) if json_ else members_table(members, str(leader)))
