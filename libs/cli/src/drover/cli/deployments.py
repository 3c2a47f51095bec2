"""`drover deployment list|status|promote|pause|resume|fail`: rolling updates and canaries."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from drover.cli import monitor
from drover.cli.api import Client, seg
from drover.cli.common import (
    ADDRESS,
    NAMESPACE,
    Address,
    Detach,
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
from drover.cli.output import as_json, short, table

DeploymentId = Annotated[
    str, typer.Argument(metavar="<deployment>", help="A deployment's ID or a unique prefix.")
]


def deployment_list_table(deployments: list[dict[str, Any]], verbose: bool = False) -> str:
    rows = sorted(deployments, key=lambda d: d.get("CreateIndex", 0), reverse=True)
    return table(
        ["ID", "Job ID", "Job Version", "Status", "Description"],
        [
            [short(d["ID"], verbose), d["JobID"], d["JobVersion"], d["Status"], d["StatusDescription"]]
            for d in rows
        ],
    )


@verb()
def list_deployments(
    filter_: Filter = "",
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """List the deployments, newest first."""
    with client(address, namespace) as c:
        found = c.get("/v1/deployments", **filtered(filter_))
    if as_json_flag:
        echo(as_json(found))
    else:
        echo(deployment_list_table(found, verbose) if found else "No deployments found")


@verb()
def status(
    deployment_id: DeploymentId,
    as_json_flag: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Show a deployment: its status and each group's progress."""
    with client(address, namespace) as c:
        d = c.get(f"/v1/deployment/{seg(resolve(c, 'deployment', deployment_id)['ID'])}")
    echo(as_json(d) if as_json_flag else monitor.deployment_block(d, verbose))


def _act(c: Client, deployment_id: str, path: str, body: Any, said: str, detach: bool, verbose: bool) -> None:
    """Ask for the change; say it happened; unless -detach, follow the deployment to its end."""
    full = resolve(c, "deployment", deployment_id)["ID"]
    c.put(f"/v1/deployment/{path}/{seg(full)}", body)
    echo(f'Deployment "{short(full, verbose)}" {said}')
    if detach:
        return
    d = monitor.follow_deployment(c, full, verbose)
    if d["Status"] != "successful":
        raise typer.Exit(1)


@verb()
def promote(
    deployment_id: DeploymentId,
    group: Annotated[
        list[str] | None, opt("group", "Promote only this group's canaries (repeat it).")
    ] = None,
    detach: Detach = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Promote the canaries of every group (or of the groups named): the rollout goes on."""
    body = {"Groups": group} if group else {"All": True}
    with client(address, namespace) as c:
        _act(c, deployment_id, "promote", body, "promoted", detach, verbose)


@verb()
def pause(
    deployment_id: DeploymentId,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Pause a deployment: no further allocs are replaced until it is resumed."""
    with client(address, namespace) as c:
        _act(c, deployment_id, "pause", {"Pause": True}, "paused", True, verbose)


@verb()
def resume(
    deployment_id: DeploymentId,
    detach: Detach = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Resume a paused deployment."""
    with client(address, namespace) as c:
        _act(c, deployment_id, "pause", {"Pause": False}, "resumed", detach, verbose)


@verb()
def fail(
    deployment_id: DeploymentId,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Mark a deployment failed (an auto_revert group rolls back to its last stable version)."""
    with client(address, namespace) as c:
        _act(c, deployment_id, "fail", None, "failed", True, verbose)
