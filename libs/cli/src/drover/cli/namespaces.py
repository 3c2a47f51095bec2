"""`drover namespace list|status|apply|delete` as Nomad's `nomad namespace ...`: the namespace
catalogue through /v1/namespaces and /v1/namespace/:name. `apply` takes a namespace's name
(with -description, -quota) or a specification file in HCL (Nomad's namespace specification)
or JSON (-json); `status` takes a name or a unique prefix of one."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from drover.cli.api import ApiError, Client, seg
from drover.cli.common import ADDRESS, Address, Filter, Json, Problem, client, echo, filtered, opt, verb
from drover.cli.output import as_json, kv, table

# A specification's blocks and arguments, and the API's names for them.
_SPEC_NAMES = {
    "name": "Name",
    "description": "Description",
    "quota": "Quota",
    "meta": "Meta",
    "capabilities": "Capabilities",
    "node_pool_config": "NodePoolConfiguration",
    "vault": "VaultConfiguration",
    "consul": "ConsulConfiguration",
}
_BLOCK_NAMES = {
    "enabled_task_drivers": "EnabledTaskDrivers",
    "disabled_task_drivers": "DisabledTaskDrivers",
    "enabled_network_modes": "EnabledNetworkModes",
    "disabled_network_modes": "DisabledNetworkModes",
    "default": "Default",
    "allowed": "Allowed",
    "denied": "Denied",
}


def _namespaces_table(namespaces: list[dict[str, Any]]) -> str:
    if not namespaces:
        return "No namespaces found"
    rows = sorted(((n["Name"], n.get("Description", "")) for n in namespaces), key=lambda r: r[0])
    return table(["Name", "Description"], rows)


@verb()
def list_namespaces(address: Address = ADDRESS, json_: Json = False, filter_: Filter = "") -> None:
    """List the namespaces (Nomad's `namespace list`)."""
    with client(address) as c:
        namespaces = c.get("/v1/namespaces", **filtered(filter_))
    echo(as_json(namespaces) if json_ else _namespaces_table(namespaces))


def _find(c: Client, name: str) -> dict[str, Any]:
    """The namespace `name` names: itself, or the one whose name it is a unique prefix of."""
    found: list[dict[str, Any]] = c.get("/v1/namespaces", prefix=name)
    exact = [n for n in found if n["Name"] == name]
    if exact or len(found) == 1:
        return (exact or found)[0]
    if not found:
        raise Problem(f'Error retrieving namespaces: Namespace "{name}" matched no namespaces')
    raise Problem(f"Prefix matched multiple namespaces\n\n{_namespaces_table(found)}")


def _joined(values: list[str] | None, empty: str) -> str:
    return ",".join(values) if values else empty


def _governance(title: str, block: dict[str, Any] | None) -> list[str]:
    if block is None:
        return []
    pairs = [("Default", block.get("Default", ""))]
    pairs += [(k, ", ".join(block[k])) for k in ("Allowed", "Denied") if block.get(k)]
    return ["", title, kv(pairs)]


def status_text(ns: dict[str, Any]) -> str:
    """A namespace as Nomad's `namespace status` prints it."""
    caps = ns.get("Capabilities") or {}
    basics = [
        ("Name", ns["Name"]),
        ("Description", ns.get("Description", "")),
        ("Quota", ns.get("Quota", "")),
        ("Enabled Drivers", _joined(caps.get("EnabledTaskDrivers"), "*")),
        ("Disabled Drivers", _joined(caps.get("DisabledTaskDrivers"), "")),
        ("Enabled Network Modes", _joined(caps.get("EnabledNetworkModes"), "*")),
        ("Disabled Network Modes", _joined(caps.get("DisabledNetworkModes"), "")),
    ]
    lines = [kv(basics)]
    if ns.get("Meta"):
        lines += ["", "Metadata", kv(sorted(ns["Meta"].items()))]
    lines += _governance("Node Pool Configuration", ns.get("NodePoolConfiguration"))
    lines += _governance("Vault Configuration", ns.get("VaultConfiguration"))
    lines += _governance("Consul Configuration", ns.get("ConsulConfiguration"))
    return "\n".join(lines)


@verb()
def status(
    name: Annotated[str, typer.Argument(help="The namespace, or a unique prefix of its name.")],
    address: Address = ADDRESS,
    json_: Json = False,
) -> None:
    """Show a namespace (Nomad's `namespace status`)."""
    with client(address) as c:
        ns = _find(c, name)
    echo(as_json(ns) if json_ else status_text(ns))


def _block(value: Any) -> dict[str, Any]:
    """A block of a specification (a list of one body, as the HCL reader gives it) as the
    API's object."""
    body = value[0] if isinstance(value, list) and value else value
    if not isinstance(body, dict):
        raise Problem(f"Error parsing namespace specification: {value!r} is not a block")
    return {_BLOCK_NAMES.get(str(k), str(k)): v for k, v in body.items()}


def spec_from_hcl(src: str, filename: str) -> dict[str, Any]:
    """Nomad's namespace specification (HCL) as the API's Namespace."""
    from drover.jobspec import JobspecError, parse_document

    try:
        doc = parse_document(src, filename=filename)
    except JobspecError as e:
        raise Problem("Error parsing namespace specification:\n" + "\n".join(e.problems)) from None
    unknown = sorted(set(doc) - set(_SPEC_NAMES))
    if unknown:
        raise Problem(f"Error parsing namespace specification: unknown {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "meta":
            out["Meta"] = {str(k): str(v) for k, v in _block(value).items()}
        elif key in ("capabilities", "node_pool_config", "vault", "consul"):
            out[_SPEC_NAMES[key]] = _block(value)
        else:
            out[_SPEC_NAMES[key]] = value
    return out


def _read_spec(path: str, as_json_spec: bool) -> dict[str, Any]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    if not as_json_spec:
        return spec_from_hcl(text, "<stdin>" if path == "-" else path)
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as e:
        raise Problem(f"Failed to parse namespace: {e}") from e
    if not isinstance(spec, dict):
        raise Problem("Failed to parse namespace: not a JSON object")
    return spec


@verb()
def apply(
    input_: Annotated[
        str, typer.Argument(metavar="INPUT", help="A specification file (- for stdin), or a name.")
    ],
    address: Address = ADDRESS,
    description: Annotated[str | None, opt("description", "The namespace's description.")] = None,
    quota: Annotated[str | None, opt("quota", "The quota to attach to it.")] = None,
    json_spec: Annotated[bool, opt("json", "The specification is JSON.")] = False,
) -> None:
    """Create or update a namespace (Nomad's `namespace apply`).

    From a specification file, or by name with -description and -quota (what they leave
    out is kept)."""
    with client(address) as c:
        if input_ == "-" or Path(input_).is_file():
            if description is not None or quota is not None:
                echo("Flags are ignored when a file is specified!")
            spec = _read_spec(input_, json_spec)
        else:
            try:
                spec = c.get(f"/v1/namespace/{seg(input_)}")
            except ApiError as e:
                if e.status != 404:
                    raise
                spec = {"Name": input_}
            if description is not None:
                spec["Description"] = description
            if quota is not None:
                spec["Quota"] = quota
        c.put("/v1/namespace", spec)
    echo(f'Successfully applied namespace "{spec.get("Name", "")}"!')


@verb()
def delete(
    name: Annotated[str, typer.Argument(help="The namespace.")],
    address: Address = ADDRESS,
) -> None:
    """Delete a namespace (Nomad's `namespace delete`).

    Never `default`, nor one that still has live jobs or allocations, or variables."""
    with client(address) as c:
        c.delete(f"/v1/namespace/{seg(name)}")
    echo(f'Successfully deleted namespace "{name}"!')
